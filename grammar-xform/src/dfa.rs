//! Terminals as byte DFAs.
//!
//! Every [`Terminal`] of the IR is compiled into a [`TerminalDfa`]: a
//! deterministic automaton over *bytes* that recognises exactly the byte
//! strings the terminal matches (a full match, anchored at both ends).
//! ZapFormat (§4.1) implements terminals "as finite state machines (FSM) for
//! matching"; this module is that FSM, shared by the Earley engine and the
//! reference recognizer.
//!
//! * [`Terminal::Literal`] becomes a chain of states.
//! * [`Terminal::Class`] becomes the UTF-8 byte automaton of its character
//!   set (one scalar value, 1–4 bytes).
//! * [`Terminal::Regex`] is parsed by `regex-syntax` (Unicode mode, so `.`
//!   and classes match whole UTF-8 sequences), compiled to a Thompson NFA and
//!   determinised by `regex-automata` into a dense DFA that is anchored at
//!   the start; acceptance is read off the DFA's end-of-input transition so
//!   that `$`-style look-arounds at the end are honoured.
//! * [`Terminal::And`] is the product of its two regexes' automata, explored
//!   eagerly ([`TerminalDfa::intersection`]; bounded by `dfa_states`).
//!
//! The result is then *re-tabled* into our own compact layout: states are
//! renumbered densely with `0` = [`TerminalDfa::DEAD`], every state that
//! cannot reach an accepting state is merged into `DEAD` (so
//! [`TerminalDfa::can_continue`] is exact: a non-dead state always has a
//! completion), and bytes are grouped into equivalence classes. The hot
//! path [`TerminalDfa::next`] is two array loads.
//!
//! [`TerminalDfa::lazy_regex`] builds the same automaton state by state
//! ([`crate::lazy`]): the NFA at once, each DFA state when a transition
//! first reaches it. Use it where a caller visits a small part of a large
//! automaton (a product of key patterns stepped by one character of each
//! class); the queries are the same, state ids are stable, and a state
//! past [`RegexLimits::dfa_states`] answers `DEAD` and sets
//! [`TerminalDfa::overflowed`].

use regex_automata::{
    dfa::{dense, Automaton, StartKind},
    nfa::thompson::{self, WhichCaptures},
    Anchored, Input, MatchKind,
};
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir};
use std::collections::HashMap;

use crate::error::GrammarError;
use crate::ir::{CharClass, Terminal};
use crate::lazy::{class_table, LazyTables};
use crate::limits::{short_regex, Limit, RegexLimits};
use std::sync::Arc;

/// Upper bound on the memory regex-automata may use while determinising one
/// regex terminal (pathological regexes like `(a|b)*a(a|b){30}` are
/// rejected with an error instead of exhausting memory); the default of
/// [`RegexLimits::dfa_bytes`].
pub const DETERMINIZE_LIMIT_BYTES: usize = RegexLimits::DEFAULT_DFA_BYTES;

/// A terminal as a deterministic byte automaton (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalDfa {
    /// Byte → equivalence class.
    classes: Box<[u8; 256]>,
    /// Number of byte classes (the row length of `table`).
    stride: usize,
    /// `num_states * stride` transitions; row 0 is the dead state.
    table: Vec<u32>,
    /// Whether the bytes read so far are a full match.
    accepting: Vec<bool>,
    /// Whether some transition leads to a non-dead state.
    live: Vec<bool>,
    start: u32,
    /// States built on first use ([`TerminalDfa::lazy_regex`]); `table`,
    /// `accepting` and `live` are then empty.
    lazy: Option<LazyRef>,
}

/// A shared lazy automaton; two are equal when they are the same one.
#[derive(Clone, Debug)]
struct LazyRef(Arc<LazyTables>);

impl PartialEq for LazyRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for LazyRef {}

impl TerminalDfa {
    /// The dead state: no continuation of the bytes read can match.
    pub const DEAD: u32 = 0;

    /// Compiles a terminal under the default [`RegexLimits`]. Errors only
    /// for regexes that do not parse or use features a DFA cannot express
    /// (Unicode word boundaries) — [`GrammarError::Regex`] — or whose NFA
    /// or DFA exceeds a limit — [`GrammarError::LimitExceeded`].
    pub fn compile(t: &Terminal) -> Result<TerminalDfa, GrammarError> {
        Self::compile_with(t, &RegexLimits::default())
    }

    /// [`TerminalDfa::compile`] under explicit limits.
    pub fn compile_with(t: &Terminal, limits: &RegexLimits) -> Result<TerminalDfa, GrammarError> {
        match t {
            Terminal::Literal(bytes) => Ok(Self::literal(bytes)),
            Terminal::Class(c) => Self::from_hir(&class_hir(c), &t.to_string(), limits),
            Terminal::Regex(re) => Self::regex_with(re, limits),
            Terminal::And(a, b) => Self::intersection(
                &Self::regex_with(a, limits)?,
                &Self::regex_with(b, limits)?,
                &t.to_string(),
                limits,
            ),
        }
    }

    /// The product automaton of `a` and `b`: the byte strings both match
    /// ([`Terminal::And`]), built eagerly (the reachable pairs of states,
    /// breadth first; pairs that cannot reach a pair accepting in both are
    /// merged into `DEAD`). At most `limits.dfa_states` pairs, else
    /// [`GrammarError::LimitExceeded`] naming `place`.
    pub fn intersection(
        a: &TerminalDfa,
        b: &TerminalDfa,
        place: &str,
        limits: &RegexLimits,
    ) -> Result<TerminalDfa, GrammarError> {
        let mut raw = RawDfa::with_dead();
        let (sa, sb) = (a.start(), b.start());
        if sa == Self::DEAD || sb == Self::DEAD {
            return Ok(raw.finish(0));
        }
        // one representative byte per pair of classes
        let mut members: Vec<Vec<u8>> = Vec::new();
        let mut seen = HashMap::new();
        for x in 0..=255u8 {
            let next = members.len();
            let k = *seen
                .entry((a.byte_class(x), b.byte_class(x)))
                .or_insert(next);
            if k == next {
                members.push(Vec::new());
            }
            members[k].push(x);
        }
        let mut ids: HashMap<(u32, u32), u32> = HashMap::new();
        let mut queue = vec![(sa, sb)];
        let start = raw.add_state(a.is_accepting(sa) && b.is_accepting(sb));
        ids.insert((sa, sb), start);
        let mut i = 0;
        while i < queue.len() {
            let (p, q) = queue[i];
            let from = ids[&(p, q)];
            i += 1;
            for bytes in &members {
                let x = bytes[0];
                let (p2, q2) = (a.next(p, x), b.next(q, x));
                if p2 == Self::DEAD || q2 == Self::DEAD {
                    continue;
                }
                let to = match ids.get(&(p2, q2)) {
                    Some(&id) => id,
                    None => {
                        if ids.len() >= limits.dfa_states {
                            return Err(GrammarError::LimitExceeded {
                                limit: Limit::DfaStates,
                                max: limits.dfa_states,
                                place: format!("terminal {}", short_regex(place)),
                                detail: format!(
                                    "the product of the two regexes has more than {} states",
                                    limits.dfa_states
                                ),
                            });
                        }
                        let id = raw.add_state(a.is_accepting(p2) && b.is_accepting(q2));
                        ids.insert((p2, q2), id);
                        queue.push((p2, q2));
                        id
                    }
                };
                for &y in bytes {
                    raw.trans[from as usize][y as usize] = to;
                }
            }
        }
        Ok(raw.finish(start))
    }

    /// The chain automaton of a byte string, built directly in the final
    /// layout (linear in the literal: grammars with tens of thousands of
    /// literals, such as a large `enum`, compile quickly).
    pub fn literal(bytes: &[u8]) -> TerminalDfa {
        let n = bytes.len();
        // Class 0: bytes the literal does not use (dead everywhere); one
        // class per distinct byte of the literal.
        let mut classes = Box::new([0u8; 256]);
        let mut stride = 1usize;
        for &b in bytes {
            if classes[b as usize] == 0 {
                if stride == 256 {
                    // all 256 byte values occur: no room for class 0
                    return Self::literal_general(bytes);
                }
                classes[b as usize] = stride as u8;
                stride += 1;
            }
        }
        let m = n + 2; // DEAD, then "read bytes[..i]" for i in 0..=n
        let mut table = vec![0u32; m * stride];
        for (i, &b) in bytes.iter().enumerate() {
            table[(i + 1) * stride + classes[b as usize] as usize] = (i + 2) as u32;
        }
        let mut accepting = vec![false; m];
        accepting[n + 1] = true;
        let live = (0..m).map(|s| s >= 1 && s <= n).collect();
        TerminalDfa {
            classes,
            stride,
            table,
            accepting,
            live,
            start: 1,
            lazy: None,
        }
    }

    /// [`Self::literal`] through the general construction.
    fn literal_general(bytes: &[u8]) -> TerminalDfa {
        let n = bytes.len();
        // raw state i+1 = "read bytes[..i]"
        let mut raw = RawDfa::with_dead();
        for i in 0..=n {
            let s = raw.add_state(i == n);
            debug_assert_eq!(s as usize, i + 1);
        }
        for (i, &b) in bytes.iter().enumerate() {
            raw.trans[i + 1][b as usize] = (i + 2) as u32;
        }
        raw.finish(1)
    }

    /// The UTF-8 automaton of one character of `class`.
    pub fn class(class: &CharClass) -> TerminalDfa {
        // Compiling a character class cannot fail: no look-around, and the
        // automaton has a handful of states.
        Self::from_hir(&class_hir(class), "class", &RegexLimits::default())
            .unwrap_or_else(|_| Self::empty())
    }

    /// The automaton of a regex (`regex-syntax` dialect, Unicode mode),
    /// implicitly anchored at both ends.
    pub fn regex(pattern: &str) -> Result<TerminalDfa, GrammarError> {
        Self::regex_with(pattern, &RegexLimits::default())
    }

    /// [`TerminalDfa::regex`] under explicit limits.
    pub fn regex_with(pattern: &str, limits: &RegexLimits) -> Result<TerminalDfa, GrammarError> {
        Self::from_hir(&parse(pattern)?, pattern, limits)
    }

    /// [`TerminalDfa::regex_with`] built lazily ([`crate::lazy`]): the NFA
    /// now (bounded by `limits.nfa_bytes`), each DFA state when a
    /// transition first reaches it, at most `limits.dfa_states` of them (a
    /// state past the bound answers `DEAD` and sets
    /// [`TerminalDfa::overflowed`]). A regex with look-around is
    /// determinised at once, as by [`TerminalDfa::regex_with`].
    pub fn lazy_regex(pattern: &str, limits: &RegexLimits) -> Result<TerminalDfa, GrammarError> {
        Self::lazy_hir(&parse(pattern)?, pattern, limits)
    }

    /// [`TerminalDfa::lazy_regex`] of a parsed regex (`pattern` names it in
    /// errors).
    pub fn lazy_hir(
        hir: &Hir,
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<TerminalDfa, GrammarError> {
        if !hir.properties().look_set().is_empty() {
            return Self::from_hir(hir, pattern, limits);
        }
        let nfa = Self::thompson(hir, pattern, limits)?;
        let (classes, reps) = class_table(nfa.byte_classes());
        let stride = reps.len();
        let (tables, start) = LazyTables::new(nfa, reps, limits.dfa_states.saturating_add(1));
        Ok(TerminalDfa {
            classes: Box::new(classes),
            stride,
            table: Vec::new(),
            accepting: Vec::new(),
            live: Vec::new(),
            start,
            lazy: Some(LazyRef(Arc::new(tables))),
        })
    }

    /// True when a lazy automaton refused a state for its
    /// [`RegexLimits::dfa_states`] bound: answers computed since may have
    /// left out matches (never true of an eager automaton, whose bound is
    /// checked when it is built).
    pub fn overflowed(&self) -> bool {
        self.lazy.as_ref().is_some_and(|l| l.0.overflowed())
    }

    /// True when states are built on first use.
    pub fn is_lazy(&self) -> bool {
        self.lazy.is_some()
    }

    /// `regex-automata`'s Thompson NFA of `hir` (no captures), bounded by
    /// `limits.nfa_bytes`.
    fn thompson(
        hir: &Hir,
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<thompson::NFA, GrammarError> {
        let lower = crate::limits::nfa_bytes_lower_bound(hir);
        if lower > limits.nfa_bytes as u128 {
            return Err(GrammarError::LimitExceeded {
                limit: Limit::NfaBytes,
                max: limits.nfa_bytes,
                place: format!("terminal {}", short_regex(pattern)),
                detail: format!(
                    "the regex's NFA takes at least {lower} bytes (counted repetitions multiplied out), more than nfa_bytes {}",
                    limits.nfa_bytes
                ),
            });
        }
        thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .which_captures(WhichCaptures::None)
                    .nfa_size_limit(Some(limits.nfa_bytes)),
            )
            .build_from_hir(hir)
            .map_err(|e| match e.size_limit() {
                Some(max) => GrammarError::LimitExceeded {
                    limit: Limit::NfaBytes,
                    max,
                    place: format!("terminal {}", short_regex(pattern)),
                    detail: e.to_string(),
                },
                None => GrammarError::Regex {
                    regex: pattern.to_string(),
                    line: 0,
                    column: 0,
                    offset: 0,
                    reason: e.to_string(),
                },
            })
    }

    /// The automaton of the empty language.
    pub fn empty() -> TerminalDfa {
        RawDfa::with_dead().finish(0)
    }

    fn from_hir(
        hir: &Hir,
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<TerminalDfa, GrammarError> {
        let err = |reason: String| GrammarError::Regex {
            regex: pattern.to_string(),
            line: 0,
            column: 0,
            offset: 0,
            reason,
        };
        let over = |limit: Limit, max: usize, detail: String| GrammarError::LimitExceeded {
            limit,
            max,
            place: format!("terminal {}", short_regex(pattern)),
            detail,
        };
        let nfa = Self::thompson(hir, pattern, limits)?;
        let (table_limit, scratch_limit) =
            limits.dense_builder_limits(nfa.byte_classes().alphabet_len());
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::All)
                    .start_kind(StartKind::Anchored)
                    .byte_classes(true)
                    .unicode_word_boundary(false)
                    .determinize_size_limit(Some(scratch_limit))
                    .dfa_size_limit(Some(table_limit)),
            )
            .build_from_nfa(&nfa)
            .map_err(|e| {
                if e.is_size_limit_exceeded() && table_limit < limits.dfa_bytes {
                    // the table bound derived from the state bound: report
                    // the state bound (what the user configured)
                    over(
                        Limit::DfaStates,
                        limits.dfa_states,
                        format!("more than {} DFA states ({e})", limits.dfa_states),
                    )
                } else if e.is_size_limit_exceeded() {
                    over(Limit::DfaBytes, limits.dfa_bytes, e.to_string())
                } else {
                    err(format!("cannot build a DFA: {e}"))
                }
            })?;
        let start = dfa
            .start_state_forward(&Input::new("").anchored(Anchored::Yes))
            .map_err(|e| err(format!("no anchored start state: {e}")))?;

        // Explore the reachable part, mapping regex-automata states to ours.
        let mut raw = RawDfa::with_dead();
        let mut ids: HashMap<regex_automata::util::primitives::StateID, u32> = HashMap::new();
        let mut queue = Vec::new();
        let mut intern = |sid, raw: &mut RawDfa, queue: &mut Vec<_>| -> Result<u32, GrammarError> {
            if dfa.is_dead_state(sid) {
                return Ok(TerminalDfa::DEAD);
            }
            if dfa.is_quit_state(sid) {
                return Err(err(
                    "the regex needs a quit state (unsupported look-around)".into(),
                ));
            }
            if let Some(&id) = ids.get(&sid) {
                return Ok(id);
            }
            if ids.len() >= limits.dfa_states {
                return Err(over(
                    Limit::DfaStates,
                    limits.dfa_states,
                    format!("more than {} DFA states", limits.dfa_states),
                ));
            }
            let acc = dfa.is_match_state(dfa.next_eoi_state(sid));
            let id = raw.add_state(acc);
            ids.insert(sid, id);
            queue.push((sid, id));
            Ok(id)
        };
        let my_start = intern(start, &mut raw, &mut queue)?;
        while let Some((sid, id)) = queue.pop() {
            for b in 0..=255u8 {
                let next = dfa.next_state(sid, b);
                let n = intern(next, &mut raw, &mut queue)?;
                raw.trans[id as usize][b as usize] = n;
            }
        }
        Ok(raw.finish(my_start))
    }

    /// The start state (`DEAD` for an empty language).
    #[inline]
    pub fn start(&self) -> u32 {
        self.start
    }

    /// The state after reading `byte` in `state`; `DEAD` if no match can
    /// continue.
    #[inline]
    pub fn next(&self, state: u32, byte: u8) -> u32 {
        let c = self.classes[byte as usize] as usize;
        match &self.lazy {
            None => self.table[state as usize * self.stride + c],
            Some(l) => l.0.next(state, c),
        }
    }

    /// Whether the bytes read so far are a full match.
    #[inline]
    pub fn is_accepting(&self, state: u32) -> bool {
        match &self.lazy {
            None => self.accepting[state as usize],
            Some(l) => l.0.is_accepting(state),
        }
    }

    /// Whether some byte leads to a non-dead state (equivalently, since
    /// states that cannot reach acceptance are merged into `DEAD`: whether
    /// some non-empty continuation is a full match).
    #[inline]
    pub fn can_continue(&self, state: u32) -> bool {
        match &self.lazy {
            None => self.live[state as usize],
            Some(l) => l.0.can_continue(state),
        }
    }

    /// Runs the automaton over `bytes` from `state`.
    pub fn run(&self, mut state: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            if state == Self::DEAD {
                break;
            }
            state = self.next(state, b);
        }
        state
    }

    /// Whether `bytes` is a full match of the terminal.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        self.is_accepting(self.run(self.start, bytes))
    }

    /// Whether `bytes` is a prefix of some full match.
    pub fn is_prefix(&self, bytes: &[u8]) -> bool {
        self.run(self.start, bytes) != Self::DEAD
    }

    /// Number of states, including `DEAD` (of a lazy automaton: built so
    /// far).
    pub fn num_states(&self) -> usize {
        match &self.lazy {
            None => self.accepting.len(),
            Some(l) => l.0.num_states(),
        }
    }

    /// Number of byte equivalence classes.
    pub fn num_byte_classes(&self) -> usize {
        self.stride
    }

    /// The byte equivalence class of `byte`: bytes of one class have the
    /// same transitions in every state.
    #[inline]
    pub fn byte_class(&self, byte: u8) -> u8 {
        self.classes[byte as usize]
    }

    /// Heap memory owned by the automaton.
    pub fn heap_bytes(&self) -> usize {
        256 + self.table.capacity() * 4
            + self.accepting.capacity()
            + self.live.capacity()
            + self.lazy.as_ref().map_or(0, |l| l.0.heap_bytes())
    }
}

/// The automaton under construction: full 256-wide rows, row 0 dead.
struct RawDfa {
    trans: Vec<[u32; 256]>,
    acc: Vec<bool>,
}

impl RawDfa {
    fn with_dead() -> RawDfa {
        RawDfa {
            trans: vec![[0; 256]],
            acc: vec![false],
        }
    }

    fn add_state(&mut self, accepting: bool) -> u32 {
        self.trans.push([0; 256]);
        self.acc.push(accepting);
        (self.trans.len() - 1) as u32
    }

    /// Prunes states that cannot reach acceptance (into DEAD), renumbers
    /// the rest densely (breadth-first from `start`), and computes byte
    /// classes.
    fn finish(self, start: u32) -> TerminalDfa {
        let n = self.trans.len();
        // Co-reachability: reverse edges, search from accepting states.
        let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (s, row) in self.trans.iter().enumerate().skip(1) {
            for &t in row.iter() {
                if t != 0 {
                    rev[t as usize].push(s as u32);
                }
            }
        }
        let mut useful = vec![false; n];
        let mut stack: Vec<u32> = (1..n as u32).filter(|&s| self.acc[s as usize]).collect();
        for &s in &stack {
            useful[s as usize] = true;
        }
        while let Some(s) = stack.pop() {
            for &p in &rev[s as usize] {
                if !useful[p as usize] {
                    useful[p as usize] = true;
                    stack.push(p);
                }
            }
        }
        // Renumber useful states reachable from start, BFS order.
        let mut new_id = vec![0u32; n];
        let mut order: Vec<u32> = Vec::new();
        if start != 0 && useful[start as usize] {
            new_id[start as usize] = 1;
            order.push(start);
            let mut i = 0;
            while i < order.len() {
                let s = order[i] as usize;
                i += 1;
                for &t in self.trans[s].iter() {
                    if t != 0 && useful[t as usize] && new_id[t as usize] == 0 {
                        order.push(t);
                        new_id[t as usize] = order.len() as u32;
                    }
                }
            }
        }
        let m = order.len() + 1;
        // Byte classes: bytes with identical columns.
        let mut classes = Box::new([0u8; 256]);
        let mut col_ids: HashMap<Vec<u32>, u8> = HashMap::new();
        let mut reps: Vec<u8> = Vec::new();
        for b in 0..256usize {
            let col: Vec<u32> = order
                .iter()
                .map(|&s| new_id[self.trans[s as usize][b] as usize])
                .collect();
            let next = col_ids.len() as u8;
            let id = *col_ids.entry(col).or_insert_with(|| {
                reps.push(b as u8);
                next
            });
            classes[b] = id;
        }
        let stride = reps.len();
        let mut table = vec![0u32; m * stride];
        let mut accepting = vec![false; m];
        let mut live = vec![false; m];
        for (k, &s) in order.iter().enumerate() {
            let row = k + 1;
            accepting[row] = self.acc[s as usize];
            for (c, &b) in reps.iter().enumerate() {
                let t = new_id[self.trans[s as usize][b as usize] as usize];
                table[row * stride + c] = t;
                live[row] |= t != 0;
            }
        }
        TerminalDfa {
            classes,
            stride,
            table,
            accepting,
            live,
            start: if order.is_empty() { 0 } else { 1 },
            lazy: None,
        }
    }
}

/// A terminal's regex text as HIR (Unicode, UTF-8 only).
fn parse(pattern: &str) -> Result<Hir, GrammarError> {
    regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(true)
        .build()
        .parse(pattern)
        .map_err(|e| regex_error(pattern, e))
}

/// The HIR of one character of a class.
pub(crate) fn class_hir(c: &CharClass) -> Hir {
    let cls = ClassUnicode::new(
        c.ranges()
            .iter()
            .map(|&(a, b)| ClassUnicodeRange::new(a, b)),
    );
    Hir::class(Class::Unicode(cls))
}

fn regex_error(pattern: &str, e: regex_syntax::Error) -> GrammarError {
    let (offset, reason) = match &e {
        regex_syntax::Error::Parse(p) => (p.span().start.offset, p.kind().to_string()),
        regex_syntax::Error::Translate(t) => (t.span().start.offset, t.kind().to_string()),
        other => (0, other.to_string()),
    };
    GrammarError::Regex {
        regex: pattern.to_string(),
        line: 0,
        column: 0,
        offset,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use regex_automata::meta::Regex;

    fn full_match(re: &str) -> Regex {
        regex_automata::meta::Builder::new()
            .syntax(
                regex_automata::util::syntax::Config::new()
                    .utf8(true)
                    .unicode(true),
            )
            .build(&format!("^(?:{re})$"))
            .unwrap()
    }

    fn check_regex_against_meta(re: &str, inputs: &[&[u8]]) {
        let d = TerminalDfa::regex(re).unwrap();
        let m = full_match(re);
        for inp in inputs {
            assert_eq!(
                d.matches(inp),
                m.is_match(Input::new(inp)),
                "regex {re:?} on {:?}",
                String::from_utf8_lossy(inp)
            );
        }
    }

    #[test]
    fn literal_chain() {
        let d = TerminalDfa::compile(&Terminal::Literal(b"abc".to_vec())).unwrap();
        assert_eq!(d.num_states(), 5);
        assert!(d.matches(b"abc"));
        assert!(!d.matches(b"ab") && !d.matches(b"abcd") && !d.matches(b""));
        let s = d.run(d.start(), b"ab");
        assert!(d.can_continue(s) && !d.is_accepting(s));
        let s = d.next(s, b'c');
        assert!(d.is_accepting(s) && !d.can_continue(s));
        assert_eq!(d.next(d.start(), b'x'), TerminalDfa::DEAD);
        assert!(!d.can_continue(TerminalDfa::DEAD) && !d.is_accepting(TerminalDfa::DEAD));
    }

    #[test]
    fn direct_literal_equals_general_construction() {
        let all: Vec<u8> = (0..=255u8).collect();
        for lit in [&b""[..], b"a", b"abc", b"aab", b"\xff\x00\xff", &all] {
            let d = TerminalDfa::literal(lit);
            let g = TerminalDfa::literal_general(lit);
            assert_eq!(d.num_states(), g.num_states());
            for probe in [lit, &lit[..lit.len() / 2], b"abd", b"", b"\xff"] {
                assert_eq!(d.matches(probe), g.matches(probe), "{lit:?} {probe:?}");
                assert_eq!(d.is_prefix(probe), g.is_prefix(probe), "{lit:?} {probe:?}");
            }
        }
    }

    #[test]
    fn class_utf8() {
        let c = CharClass::new([('a', 'c'), ('é', 'é'), ('😀', '😀')], false);
        let d = TerminalDfa::compile(&Terminal::Class(c)).unwrap();
        for s in ["a", "b", "c", "é", "😀"] {
            assert!(d.matches(s.as_bytes()), "{s}");
        }
        for s in ["", "d", "ab", "è", "😁"] {
            assert!(!d.matches(s.as_bytes()), "{s}");
        }
        // prefix of a multibyte char is live
        assert!(d.is_prefix(&"😀".as_bytes()[..2]));
        // invalid UTF-8 is rejected
        assert!(!d.matches(&[0xC3]) && !d.matches(&[0xFF]));
    }

    #[test]
    fn empty_class_and_negated_class() {
        let d = TerminalDfa::compile(&Terminal::Class(CharClass::new([], false))).unwrap();
        assert_eq!(d.start(), TerminalDfa::DEAD);
        assert!(!d.matches(b"a"));
        let any = TerminalDfa::compile(&Terminal::Class(CharClass::new([], true))).unwrap();
        assert!(any.matches("\u{10FFFF}".as_bytes()) && any.matches(b"\0") && !any.matches(b"ab"));
        // surrogates encoded as UTF-8 (CESU) are not chars
        assert!(!any.matches(&[0xED, 0xA0, 0x80]));
    }

    #[test]
    fn regex_full_match_and_lookaround() {
        check_regex_against_meta(
            r"[a-z]+(\.[a-z]+)*|\d{2,3}|$|^x",
            &[b"", b"a", b"a.b", b"a.", b"12", b"1234", b"x", b"xx", b"A"],
        );
        check_regex_against_meta(r"(?m)a$\n^b", &[b"a\nb", b"ab", b"a\n"]);
        check_regex_against_meta(r".", &["é".as_bytes(), b"\n", &[0xC3], b"ab"]);
        check_regex_against_meta(r"(?s).", &[b"\n"]);
        check_regex_against_meta(r"a|", &[b"", b"a", b"aa"]);
    }

    #[test]
    fn dead_states_are_pruned() {
        // After "ab", `a\$b` can never match (`$` needs end of text before `b`).
        let d = TerminalDfa::regex(r"a$b|ac").unwrap();
        assert!(d.is_prefix(b"a") && !d.is_prefix(b"ab") && d.matches(b"ac"));
        let e = TerminalDfa::regex(r"a$b").unwrap();
        assert_eq!(e.start(), TerminalDfa::DEAD);
    }

    #[test]
    fn regex_errors_have_offsets() {
        match TerminalDfa::regex("ab(c") {
            Err(GrammarError::Regex { offset, .. }) => assert_eq!(offset, 2),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            TerminalDfa::regex(r"\bx"),
            Err(GrammarError::Regex { .. })
        ));
        assert!(TerminalDfa::regex(r"(?-u:\b)x").is_ok());
    }

    #[test]
    fn byte_classes_are_consistent() {
        let d = TerminalDfa::regex(r"[0-9]+|true|[^\x00-\x7F]").unwrap();
        assert!(d.num_byte_classes() < 256);
        for s in 0..d.num_states() as u32 {
            for b in 0..=255u8 {
                let rep = (0..=255u8)
                    .find(|&x| d.byte_class(x) == d.byte_class(b))
                    .unwrap();
                assert_eq!(d.next(s, b), d.next(s, rep));
            }
        }
        assert!(d.heap_bytes() > 0);
    }

    fn small_regex() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("é".to_string()),
            Just("[a-c]".to_string()),
            Just("[^a]".to_string()),
            Just(".".to_string()),
            Just(r"\d".to_string()),
            Just("".to_string()),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}{b}")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(?:{a}|{b})")),
                inner.clone().prop_map(|a| format!("(?:{a})*")),
                inner.clone().prop_map(|a| format!("(?:{a})?")),
                inner.prop_map(|a| format!("(?:{a}){{1,2}}")),
            ]
        })
    }

    fn small_input() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop_oneof![
                Just(b"a".to_vec()),
                Just(b"b".to_vec()),
                Just(b"c".to_vec()),
                Just(b"1".to_vec()),
                Just("é".as_bytes().to_vec()),
                Just(vec![0xC3]),
                Just(vec![0xA9]),
                Just(b"\n".to_vec()),
            ],
            0..7,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn regex_dfa_agrees_with_meta_regex(re in small_regex(), inputs in prop::collection::vec(small_input(), 20)) {
            let d = TerminalDfa::regex(&re).unwrap();
            let m = full_match(&re);
            for inp in &inputs {
                prop_assert_eq!(d.matches(inp), m.is_match(Input::new(inp)), "regex {:?} input {:?}", re, inp);
                // prefix-liveness agrees with "some extension matches", checked
                // against the meta regex via the extensions in the sample
                for other in &inputs {
                    let mut ext = inp.clone();
                    ext.extend_from_slice(other);
                    if m.is_match(Input::new(&ext)) {
                        prop_assert!(d.is_prefix(inp));
                    }
                }
            }
        }

        #[test]
        fn class_dfa_agrees_with_contains(
            ranges in prop::collection::vec((0u32..0x11000, 0u32..0x300), 0..5),
            negated in any::<bool>(),
            probes in prop::collection::vec(prop_oneof![0u32..0x200, 0u32..0x110000], 50),
        ) {
            let rs: Vec<(char, char)> = ranges.iter().filter_map(|&(a, w)| {
                Some((char::from_u32(a)?, char::from_u32(a + w)?))
            }).collect();
            let c = CharClass::new(rs, negated);
            let d = TerminalDfa::compile(&Terminal::Class(c.clone())).unwrap();
            for p in probes {
                if let Some(ch) = char::from_u32(p) {
                    let mut buf = [0u8; 4];
                    prop_assert_eq!(d.matches(ch.encode_utf8(&mut buf).as_bytes()), c.contains(ch), "char {:?}", ch);
                }
            }
        }
    }
}
