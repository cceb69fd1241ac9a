//! The workspace's one eager regex → DFA builder and its table layout.
//!
//! [`determinize`] runs `regex-automata`'s Thompson NFA compiler and dense
//! DFA builder under [`RegexLimits`] (the limit mapping: the NFA bound,
//! the table bound derived from the state bound, the determinisation
//! bound, each reported as a typed [`GrammarError::LimitExceeded`] naming
//! the limit the user configured), explores the DFA from its anchored
//! start, one byte per byte class, and *re-tables* it ([`DenseDfa::trimmed`])
//! into [`DenseTables`]: states renumbered densely in breadth-first order
//! with `0` = [`DEAD`], every state that cannot reach an accepting state
//! merged into `DEAD` (so `can_continue` is exact: a non-dead state always
//! has a completion), acceptance read off the end-of-input transition (so
//! `$`-style look-arounds at the end are honoured), transitions stored per
//! byte class. [`product`] explores the intersection of two automata into
//! the same layout.
//!
//! Both [`TerminalDfa`](crate::TerminalDfa) (the reference recognizer,
//! the JSON Schema compiler) and the Earley engine's `ByteDfa` hold their
//! eager automata as a [`DenseTables`] built here; the engine adds its own
//! lazy, counted and bounded layouts beside it.
//!
//! Cost: [`determinize`] is one determinisation (exponential in the regex
//! at worst, hence the limits) plus `O(states × classes)` for the
//! exploration and the re-tabling; a transition of the result is two array
//! loads ([`DenseTables::next`] after the byte's class).

use regex_automata::{
    dfa::{dense, Automaton, StartKind},
    nfa::thompson::{self, WhichCaptures},
    util::{primitives::StateID, start},
    Anchored, MatchKind,
};
use regex_syntax::hir::Hir;
use rustc_hash::FxHashMap;

use crate::error::GrammarError;
use crate::lazy::class_table;
use crate::limits::{nfa_bytes_lower_bound, short_regex, Limit, RegexLimits};

/// The dead state of every automaton of the workspace: no continuation of
/// the bytes read can match.
pub const DEAD: u32 = crate::lazy::DEAD;

/// The transitions of an eager automaton: one row of `stride` targets per
/// state (row 0 is [`DEAD`]), an accepting flag and a liveness flag per
/// state. Every non-dead state reaches an accepting one (callers build it
/// through [`DenseDfa::trimmed`] or keep that invariant themselves).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenseTables {
    /// Row length: the number of byte classes.
    stride: usize,
    /// `num_states * stride` transitions.
    trans: Vec<u32>,
    /// Whether the bytes read so far are a full match.
    accepting: Vec<bool>,
    /// Whether some transition leads to a non-dead state.
    live: Vec<bool>,
}

impl DenseTables {
    /// Tables from their rows (`trans.len() == accepting.len() * stride`;
    /// every state but [`DEAD`] live): the liveness flags are computed.
    pub fn from_rows(stride: usize, trans: Vec<u32>, accepting: Vec<bool>) -> Self {
        let live = (0..accepting.len())
            .map(|s| {
                trans[s * stride..(s + 1) * stride]
                    .iter()
                    .any(|&t| t != DEAD)
            })
            .collect();
        DenseTables {
            stride,
            trans,
            accepting,
            live,
        }
    }

    /// The state after byte class `class` in state `s`.
    #[inline]
    pub fn next(&self, s: u32, class: usize) -> u32 {
        self.trans[s as usize * self.stride + class]
    }

    /// Whether the bytes read to state `s` are a full match.
    #[inline]
    pub fn is_accepting(&self, s: u32) -> bool {
        self.accepting[s as usize]
    }

    /// Whether some byte leads from `s` to a non-dead state.
    #[inline]
    pub fn can_continue(&self, s: u32) -> bool {
        self.live[s as usize]
    }

    /// Number of states, [`DEAD`] included.
    pub fn num_states(&self) -> usize {
        self.accepting.len()
    }

    /// Number of byte classes (the row length).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Heap bytes of the tables.
    pub fn heap_bytes(&self) -> usize {
        self.trans.capacity() * 4 + self.accepting.capacity() + self.live.capacity()
    }
}

/// An eager automaton: the byte class of every byte, its [`DenseTables`]
/// and its start state ([`DEAD`] for the empty language).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenseDfa {
    /// Byte → class (the column of [`DenseTables`]).
    pub classes: [u8; 256],
    /// The transitions.
    pub tables: DenseTables,
    /// The start state.
    pub start: u32,
}

impl DenseDfa {
    /// The automaton of the empty language.
    pub fn empty() -> Self {
        Self::trimmed([0; 256], 1, &[], &[], DEAD)
    }

    /// The automaton of exactly `bytes`, written down directly: state
    /// `i + 1` has read the first `i` bytes (the start is 1, the last
    /// state accepts), each distinct byte of the literal is its own class
    /// and every other byte shares class 0. The language [`determinize`]
    /// builds for the literal's HIR, without an NFA or a determinisation:
    /// `O(len × classes)`, against a lazy DFA's per-transition closure.
    pub fn literal(bytes: &[u8]) -> Self {
        let mut present = [false; 256];
        for &b in bytes {
            present[b as usize] = true;
        }
        let distinct = present.iter().filter(|&&p| p).count();
        let mut classes = [0u8; 256];
        let ncls = if distinct == 256 {
            // no byte outside the literal: one class per byte
            for (b, c) in classes.iter_mut().enumerate() {
                *c = b as u8;
            }
            256
        } else {
            // at most 255 distinct bytes here: classes 1..=255
            let bytes_present = present.iter().enumerate().filter(|(_, &p)| p);
            for (class, (b, _)) in (1..=255u8).zip(bytes_present) {
                classes[b] = class;
            }
            distinct + 1
        };
        let n = bytes.len();
        let mut trans = vec![DEAD; (n + 2) * ncls];
        for (i, &b) in bytes.iter().enumerate() {
            trans[(i + 1) * ncls + classes[b as usize] as usize] = i as u32 + 2;
        }
        let mut accepting = vec![false; n + 2];
        accepting[n + 1] = true;
        DenseDfa {
            classes,
            tables: DenseTables::from_rows(ncls, trans, accepting),
            start: 1,
        }
    }

    /// Re-tables an automaton under construction: states `1..=acc.len()`
    /// (`raw[(s − 1) · ncls + c]` the target of state `s` on class `c`,
    /// [`DEAD`] = 0; `acc[s − 1]` whether `s` accepts) from `start`. Keeps
    /// the states reachable from `start` that reach an accepting state
    /// (the others become [`DEAD`]), renumbered densely in breadth-first
    /// order from `start` (which becomes 1). Linear in the table.
    pub fn trimmed(classes: [u8; 256], ncls: usize, raw: &[u32], acc: &[bool], start: u32) -> Self {
        let n = acc.len() + 1; // + DEAD
        let row = |s: usize| &raw[(s - 1) * ncls..s * ncls];
        // Co-reachability: reverse edges, search from accepting states.
        let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
        for s in 1..n {
            for &t in row(s) {
                if t != DEAD {
                    rev[t as usize].push(s as u32);
                }
            }
        }
        let mut useful = vec![false; n];
        let mut stack: Vec<u32> = (1..n as u32).filter(|&s| acc[s as usize - 1]).collect();
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
        // Renumber the useful states reachable from start, breadth first.
        let mut new_id = vec![DEAD; n];
        let mut order: Vec<u32> = Vec::new();
        if start != DEAD && useful[start as usize] {
            new_id[start as usize] = 1;
            order.push(start);
            let mut i = 0;
            while i < order.len() {
                let s = order[i] as usize;
                i += 1;
                for &t in row(s) {
                    if t != DEAD && useful[t as usize] && new_id[t as usize] == DEAD {
                        order.push(t);
                        new_id[t as usize] = order.len() as u32;
                    }
                }
            }
        }
        let m = order.len() + 1;
        let mut trans = vec![DEAD; m * ncls];
        let mut accepting = vec![false; m];
        for (k, &s) in order.iter().enumerate() {
            accepting[k + 1] = acc[s as usize - 1];
            for (c, &t) in row(s as usize).iter().enumerate() {
                trans[(k + 1) * ncls + c] = new_id[t as usize];
            }
        }
        DenseDfa {
            classes,
            tables: DenseTables::from_rows(ncls, trans, accepting),
            start: if order.is_empty() { DEAD } else { 1 },
        }
    }
}

impl ByteAutomaton for DenseDfa {
    fn start(&self) -> u32 {
        self.start
    }
    #[inline]
    fn next(&self, s: u32, byte: u8) -> u32 {
        self.tables.next(s, self.classes[byte as usize] as usize)
    }
    fn is_accepting(&self, s: u32) -> bool {
        self.tables.is_accepting(s)
    }
    fn byte_class(&self, byte: u8) -> u8 {
        self.classes[byte as usize]
    }
}

/// What [`product`] reads of an automaton over bytes with dead state
/// [`DEAD`].
pub trait ByteAutomaton {
    /// The start state.
    fn start(&self) -> u32;
    /// The state after `byte` in `s`.
    fn next(&self, s: u32, byte: u8) -> u32;
    /// Whether `s` accepts.
    fn is_accepting(&self, s: u32) -> bool;
    /// The byte class of `byte` (bytes of one class step alike from every
    /// state).
    fn byte_class(&self, byte: u8) -> u8;
}

/// The product of two automata: the byte strings both accept, explored
/// eagerly from the pair of start states (one byte per pair of classes)
/// and re-tabled ([`DenseDfa::trimmed`]). At most `max_states` pairs, else
/// `Err(pairs explored)`.
pub fn product<A, B>(a: &A, b: &B, max_states: usize) -> Result<DenseDfa, usize>
where
    A: ByteAutomaton + ?Sized,
    B: ByteAutomaton + ?Sized,
{
    let mut key_of = FxHashMap::default();
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for x in 0..=255u8 {
        let next = key_of.len();
        let c = *key_of
            .entry((a.byte_class(x), b.byte_class(x)))
            .or_insert(next);
        if c == reps.len() {
            reps.push(x);
        }
        classes[x as usize] = c as u8;
    }
    let ncls = reps.len();
    let mut ids = FxHashMap::default();
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let mut raw: Vec<u32> = Vec::new();
    let start = (a.start(), b.start());
    if start.0 != DEAD && start.1 != DEAD {
        ids.insert(start, 1u32);
        pairs.push(start);
    }
    let mut i = 0;
    while i < pairs.len() {
        let (p, q) = pairs[i];
        i += 1;
        for &x in &reps {
            let (p2, q2) = (a.next(p, x), b.next(q, x));
            if p2 == DEAD || q2 == DEAD {
                raw.push(DEAD);
                continue;
            }
            let next = pairs.len() as u32 + 1;
            let id = *ids.entry((p2, q2)).or_insert(next);
            if id == next {
                if pairs.len() >= max_states {
                    return Err(pairs.len() + 1);
                }
                pairs.push((p2, q2));
            }
            raw.push(id);
        }
    }
    let acc: Vec<bool> = pairs
        .iter()
        .map(|&(p, q)| a.is_accepting(p) && b.is_accepting(q))
        .collect();
    let start = if pairs.is_empty() { DEAD } else { 1 };
    Ok(DenseDfa::trimmed(classes, ncls, &raw, &acc, start))
}

/// A finite set of byte strings as a [`ByteAutomaton`] that accepts every
/// byte string *not* in the set: the set's trie, with one more state
/// ("left the trie", accepting, looping on every byte) that every missing
/// edge leads to. A trie node accepts unless a string of the set ends
/// there. [`except`]'s second operand.
///
/// States: [`DEAD`] (never reached), `1` = left the trie, `2 + i` = trie
/// node `i` (`2` the root). Byte classes: one per distinct byte of the
/// strings, and one for every other byte.
#[derive(Clone, Debug)]
pub struct ExceptTrie {
    kids: FxHashMap<(u32, u8), u32>,
    /// Per trie node: a string of the set ends here.
    ends: Vec<bool>,
    classes: [u8; 256],
}

impl ExceptTrie {
    /// The state every missing edge leads to.
    const OFF: u32 = 1;
    /// The trie's root.
    const ROOT: u32 = 2;

    /// The automaton of "none of `names`".
    pub fn new(names: &[Vec<u8>]) -> ExceptTrie {
        let mut kids = FxHashMap::default();
        let mut ends = vec![false];
        let mut used = [false; 256];
        for n in names {
            let mut cur = Self::ROOT;
            for &b in n {
                used[b as usize] = true;
                let next = ends.len() as u32 + Self::ROOT;
                cur = *kids.entry((cur, b)).or_insert_with(|| {
                    ends.push(false);
                    next
                });
            }
            ends[(cur - Self::ROOT) as usize] = true;
        }
        // class 0: the bytes no string uses (when some byte is unused)
        let all = used.iter().all(|&u| u);
        let mut classes = [0u8; 256];
        let mut next = u8::from(!all);
        for b in 0..256 {
            if used[b] {
                classes[b] = next;
                next = next.wrapping_add(1);
            }
        }
        ExceptTrie {
            kids,
            ends,
            classes,
        }
    }
}

impl ByteAutomaton for ExceptTrie {
    fn start(&self) -> u32 {
        Self::ROOT
    }
    fn next(&self, s: u32, byte: u8) -> u32 {
        if s == Self::OFF || s == DEAD {
            return s;
        }
        self.kids.get(&(s, byte)).copied().unwrap_or(Self::OFF)
    }
    fn is_accepting(&self, s: u32) -> bool {
        s == Self::OFF || (s >= Self::ROOT && !self.ends[(s - Self::ROOT) as usize])
    }
    fn byte_class(&self, byte: u8) -> u8 {
        self.classes[byte as usize]
    }
}

/// The byte strings `a` accepts except those in `names` ([`Terminal::Except`](crate::Terminal::Except)):
/// the [`product`] of `a` with [`ExceptTrie`]. Its states are about the
/// trie's nodes plus `a`'s (off the trie, the pair's second half is
/// constant), so the cost is linear in the names' bytes times `a`'s
/// classes. At most `max_states` pairs, else `Err(pairs explored)`.
pub fn except<A>(a: &A, names: &[Vec<u8>], max_states: usize) -> Result<DenseDfa, usize>
where
    A: ByteAutomaton + ?Sized,
{
    product(a, &ExceptTrie::new(names), max_states)
}

/// [`except`] under `limits.dfa_states`, for terminal `pattern`: a
/// product past the bound is [`GrammarError::LimitExceeded`] placed at
/// the terminal.
pub fn except_within<A>(
    a: &A,
    names: &[Vec<u8>],
    pattern: &str,
    limits: &RegexLimits,
) -> Result<DenseDfa, GrammarError>
where
    A: ByteAutomaton + ?Sized,
{
    except(a, names, limits.dfa_states).map_err(|_| {
        over(
            pattern,
            Limit::DfaStates,
            limits.dfa_states,
            format!(
                "the regex without the {} excluded strings has more than {} states",
                names.len(),
                limits.dfa_states
            ),
        )
    })
}

/// "Contains none of these strings" as a [`ByteAutomaton`]: the
/// Aho–Corasick automaton of the strings (their byte trie with failure
/// links, Aho & Corasick 1975), its transitions completed into a table, a
/// state accepting unless some string ends there (directly or through a
/// failure link). [`avoid`]'s second operand.
///
/// States: [`DEAD`] (a string was read; absorbing), `1 + i` = trie node
/// `i` (`1` the root). Byte classes: one per distinct byte of the
/// strings, and one for every other byte (which always returns to the
/// root).
#[derive(Clone, Debug)]
pub struct AvoidAc {
    /// `next[node * ncls + class]`: the successor node, or `u32::MAX` when
    /// a string ends there.
    next: Vec<u32>,
    ncls: usize,
    classes: [u8; 256],
}

impl AvoidAc {
    /// The automaton of "contains none of `strings`" (empty strings are
    /// ignored: with none left, every byte string is accepted).
    pub fn new(strings: &[Vec<u8>]) -> AvoidAc {
        let mut used = [false; 256];
        for s in strings {
            for &b in s {
                used[b as usize] = true;
            }
        }
        let mut classes = [0u8; 256];
        let mut ncls = 1usize; // class 0: the bytes no string uses
        for b in 0..256 {
            if used[b] {
                classes[b] = ncls as u8;
                ncls += 1;
            }
        }
        // the trie, as (node, class) -> child
        let mut kids: Vec<Vec<u32>> = vec![vec![u32::MAX; ncls]];
        let mut out = vec![false];
        for s in strings.iter().filter(|s| !s.is_empty()) {
            let mut cur = 0usize;
            for &b in s {
                let c = classes[b as usize] as usize;
                if kids[cur][c] == u32::MAX {
                    kids.push(vec![u32::MAX; ncls]);
                    out.push(false);
                    kids[cur][c] = (kids.len() - 1) as u32;
                }
                cur = kids[cur][c] as usize;
            }
            out[cur] = true;
        }
        // failure links breadth first, completing the table as we go
        let n = kids.len();
        let mut fail = vec![0usize; n];
        let mut delta = vec![0u32; n * ncls];
        let mut queue = std::collections::VecDeque::new();
        for c in 0..ncls {
            match kids[0][c] {
                u32::MAX => delta[c] = 0,
                k => {
                    delta[c] = k;
                    queue.push_back(k as usize);
                }
            }
        }
        while let Some(u) = queue.pop_front() {
            out[u] |= out[fail[u]];
            for c in 0..ncls {
                match kids[u][c] {
                    u32::MAX => delta[u * ncls + c] = delta[fail[u] * ncls + c],
                    k => {
                        fail[k as usize] = delta[fail[u] * ncls + c] as usize;
                        delta[u * ncls + c] = k;
                        queue.push_back(k as usize);
                    }
                }
            }
        }
        let next = delta
            .iter()
            .map(|&t| if out[t as usize] { u32::MAX } else { t })
            .collect();
        AvoidAc {
            next,
            ncls,
            classes,
        }
    }
}

impl ByteAutomaton for AvoidAc {
    fn start(&self) -> u32 {
        1
    }
    fn next(&self, s: u32, byte: u8) -> u32 {
        if s == DEAD {
            return DEAD;
        }
        let t = self.next[(s as usize - 1) * self.ncls + self.classes[byte as usize] as usize];
        if t == u32::MAX {
            DEAD
        } else {
            t + 1
        }
    }
    fn is_accepting(&self, s: u32) -> bool {
        s != DEAD
    }
    fn byte_class(&self, byte: u8) -> u8 {
        self.classes[byte as usize]
    }
}

/// The byte strings `a` accepts that contain none of `strings`
/// ([`Terminal::Avoid`](crate::Terminal::Avoid)): the [`product`] of `a`
/// with [`AvoidAc`]. Its states are at most `a`'s times the strings'
/// trie nodes (for free text, `a` is a UTF-8 automaton of a few states),
/// so the cost is linear in the strings' bytes. At most `max_states`
/// pairs, else `Err(pairs explored)`.
pub fn avoid<A>(a: &A, strings: &[Vec<u8>], max_states: usize) -> Result<DenseDfa, usize>
where
    A: ByteAutomaton + ?Sized,
{
    product(a, &AvoidAc::new(strings), max_states)
}

/// [`avoid`] under `limits.dfa_states`, for terminal `pattern`: a product
/// past the bound is [`GrammarError::LimitExceeded`] placed at the
/// terminal.
pub fn avoid_within<A>(
    a: &A,
    strings: &[Vec<u8>],
    pattern: &str,
    limits: &RegexLimits,
) -> Result<DenseDfa, GrammarError>
where
    A: ByteAutomaton + ?Sized,
{
    avoid(a, strings, limits.dfa_states).map_err(|_| {
        over(
            pattern,
            Limit::DfaStates,
            limits.dfa_states,
            format!(
                "the regex avoiding {} strings has more than {} states",
                strings.len(),
                limits.dfa_states
            ),
        )
    })
}

/// [`GrammarError::LimitExceeded`] for `limit` at terminal `pattern`.
fn over(pattern: &str, limit: Limit, max: usize, detail: String) -> GrammarError {
    GrammarError::LimitExceeded {
        limit,
        max,
        place: format!("terminal {}", short_regex(pattern)),
        detail,
    }
}

/// [`GrammarError::Regex`] at terminal `pattern` (no position).
fn regex_error(pattern: &str, reason: String) -> GrammarError {
    GrammarError::Regex {
        regex: pattern.to_string(),
        line: 0,
        column: 0,
        offset: 0,
        reason,
    }
}

/// Refuses a regex whose NFA would take more than `limits.nfa_bytes`
/// ([`nfa_bytes_lower_bound`]: counted repetitions multiplied out) before
/// anything is built.
pub fn check_nfa_bound(hir: &Hir, pattern: &str, limits: &RegexLimits) -> Result<(), GrammarError> {
    let lower = nfa_bytes_lower_bound(hir);
    if lower > limits.nfa_bytes as u128 {
        return Err(over(
            pattern,
            Limit::NfaBytes,
            limits.nfa_bytes,
            format!(
                "the regex's NFA takes at least {lower} bytes (counted repetitions multiplied out), more than nfa_bytes {}",
                limits.nfa_bytes
            ),
        ));
    }
    Ok(())
}

/// `regex-automata`'s Thompson NFA of `hir` (over bytes, no captures),
/// bounded by `limits.nfa_bytes` (`pattern` names the terminal in errors).
/// Callers check [`check_nfa_bound`] of the whole regex first.
pub fn thompson(
    hir: &Hir,
    pattern: &str,
    limits: &RegexLimits,
) -> Result<thompson::NFA, GrammarError> {
    thompson::Compiler::new()
        .configure(
            thompson::Config::new()
                .utf8(false)
                .which_captures(WhichCaptures::None)
                .nfa_size_limit(Some(limits.nfa_bytes)),
        )
        .build_from_hir(hir)
        .map_err(|e| match e.size_limit() {
            Some(max) => over(pattern, Limit::NfaBytes, max, e.to_string()),
            None => regex_error(pattern, e.to_string()),
        })
}

/// The eager construction: `regex-automata`'s Thompson NFA of `hir` and
/// its dense DFA (anchored, all match ends, byte classes) under `limits`,
/// explored from the start and re-tabled (module docs). A regex that needs
/// a quit state (Unicode word boundaries) is [`GrammarError::Regex`]; an
/// NFA, table or state count over a limit is
/// [`GrammarError::LimitExceeded`] naming that limit. Callers check
/// [`check_nfa_bound`] of the whole regex first.
pub fn determinize(
    hir: &Hir,
    pattern: &str,
    limits: &RegexLimits,
) -> Result<DenseDfa, GrammarError> {
    let err = |reason: String| regex_error(pattern, reason);
    let nfa = thompson(hir, pattern, limits)?;
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
                    pattern,
                    Limit::DfaStates,
                    limits.dfa_states,
                    format!("more than {} DFA states ({e})", limits.dfa_states),
                )
            } else if e.is_size_limit_exceeded() {
                over(pattern, Limit::DfaBytes, limits.dfa_bytes, e.to_string())
            } else {
                err(format!("cannot build a DFA: {e}"))
            }
        })?;
    let s0 = dfa
        .start_state(&start::Config::new().anchored(Anchored::Yes))
        .map_err(|e| err(format!("no anchored start state: {e}")))?;
    let (classes, reps) = class_table(dfa.byte_classes());
    let ncls = reps.len();
    // Breadth first over regex-automata's states, one byte per class.
    let mut ids: FxHashMap<StateID, u32> = FxHashMap::default();
    let mut order: Vec<StateID> = Vec::new();
    let mut raw: Vec<u32> = Vec::new();
    let mut acc = Vec::new();
    if !dfa.is_dead_state(s0) {
        ids.insert(s0, 1);
        order.push(s0);
    }
    let mut i = 0;
    while i < order.len() {
        let s = order[i];
        i += 1;
        acc.push(dfa.is_match_state(dfa.next_eoi_state(s)));
        for &b in &reps {
            let n = dfa.next_state(s, b);
            let id = if dfa.is_dead_state(n) {
                DEAD
            } else if dfa.is_quit_state(n) {
                return Err(err(
                    "the regex needs a quit state (unsupported look-around)".into(),
                ));
            } else if let Some(&id) = ids.get(&n) {
                id
            } else if ids.len() >= limits.dfa_states {
                return Err(over(
                    pattern,
                    Limit::DfaStates,
                    limits.dfa_states,
                    format!("more than {} DFA states", limits.dfa_states),
                ));
            } else {
                order.push(n);
                ids.insert(n, order.len() as u32);
                order.len() as u32
            };
            raw.push(id);
        }
    }
    let start = if order.is_empty() { DEAD } else { 1 };
    Ok(DenseDfa::trimmed(classes, ncls, &raw, &acc, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dfa(re: &str) -> DenseDfa {
        let hir = regex_syntax::parse(re).unwrap();
        determinize(&hir, re, &RegexLimits::default()).unwrap()
    }

    fn run(d: &DenseDfa, bytes: &[u8]) -> u32 {
        bytes.iter().fold(d.start, |s, &b| {
            if s == DEAD {
                DEAD
            } else {
                d.tables.next(s, d.classes[b as usize] as usize)
            }
        })
    }

    proptest::proptest! {
        /// The directly written literal automaton against the determinised
        /// one of the same literal: the same state reached (accepting, live
        /// or dead) after every probe, including the literal's prefixes.
        #[test]
        fn a_literal_automaton_is_the_determinised_one(
            lit in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..12),
            probes in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..14), 0..24),
        ) {
            let hir = Hir::literal(lit.clone());
            let reference = determinize(&hir, "lit", &RegexLimits::default()).unwrap();
            let direct = DenseDfa::literal(&lit);
            let prefixes = (0..=lit.len() + 1).map(|k| lit.iter().copied().chain([b'x']).take(k).collect::<Vec<u8>>());
            for p in probes.into_iter().chain(prefixes) {
                let (a, b) = (run(&direct, &p), run(&reference, &p));
                proptest::prop_assert_eq!(a == DEAD, b == DEAD, "{:?}", p);
                if a != DEAD {
                    proptest::prop_assert_eq!(direct.tables.is_accepting(a), reference.tables.is_accepting(b));
                    proptest::prop_assert_eq!(direct.tables.can_continue(a), reference.tables.can_continue(b));
                }
            }
        }
    }

    proptest::proptest! {
        /// `except` against its definition: a probe is accepted iff the
        /// regex matches it and it is none of the names; a state is live
        /// iff some accepted string extends the probe (checked on the
        /// probes' own extensions among the probes and names).
        #[test]
        fn except_is_the_regex_without_the_names(
            re in proptest::sample::select(vec!["[ab]*", "a[ab]{0,3}", "(?:ab|b)+", "[^a]*b?", "\\x00|[ab]{2}"]),
            names in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(vec![b'a', b'b', 0u8, 0xFF]), 0..5), 0..6),
            probes in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(vec![b'a', b'b', 0u8, 0xFF, b'c']), 0..6), 0..24),
        ) {
            let base = dfa(re);
            let d = except(&base, &names, 1000).unwrap();
            let full = regex_automata::meta::Regex::new(&format!("^(?:{re})$")).unwrap();
            let words: Vec<Vec<u8>> = probes.iter().chain(&names).cloned().collect();
            let accepted = |w: &[u8]| full.is_match(regex_automata::Input::new(w)) && !names.iter().any(|n| n == w);
            for p in &words {
                let s = run(&d, p);
                proptest::prop_assert_eq!(s != DEAD && d.tables.is_accepting(s), accepted(p), "{:?}", p);
                if words.iter().any(|w| w.starts_with(p) && accepted(w)) {
                    proptest::prop_assert!(s != DEAD, "{:?} extends to an accepted word", p);
                }
            }
        }
    }

    #[test]
    fn except_trie_uses_every_byte_class() {
        let names: Vec<Vec<u8>> = vec![(0..=255u8).collect(), b"ab".to_vec()];
        let d = except(&dfa("(?s:.)*"), &names, 10_000).unwrap();
        assert!(!d.tables.is_accepting(run(&d, &names[0])));
        assert!(!d.tables.is_accepting(run(&d, b"ab")));
        assert!(d.tables.is_accepting(run(&d, b"a")));
        assert!(d.tables.is_accepting(run(&d, &[0, 1, 3])));
        assert!(d.tables.is_accepting(run(&d, b"")));
        assert_eq!(except(&dfa("[ab]*"), &names, 1).map(|_| ()), Err(2));
    }

    #[test]
    fn a_literal_of_every_byte_has_a_class_per_byte() {
        let lit: Vec<u8> = (0..=255u8).collect();
        let d = DenseDfa::literal(&lit);
        assert_eq!(d.tables.stride(), 256);
        let end = run(&d, &lit);
        assert!(d.tables.is_accepting(end) && !d.tables.can_continue(end));
        assert_eq!(run(&d, &[1]), DEAD);
    }

    #[test]
    fn trimmed_drops_dead_ends_and_numbers_breadth_first() {
        // 1 -a-> 2 -b-> 3 (accepting); 1 -c-> 4 (a dead end)
        let mut classes = [0u8; 256];
        for (c, b) in [b'a', b'b', b'c'].into_iter().enumerate() {
            classes[b as usize] = c as u8 + 1;
        }
        let raw = [
            0, 2, 0, 4, // state 1
            0, 0, 3, 0, // state 2
            0, 0, 0, 0, // state 3
            0, 0, 0, 0, // state 4
        ];
        let d = DenseDfa::trimmed(classes, 4, &raw, &[false, false, true, false], 1);
        assert_eq!(d.tables.num_states(), 4);
        assert_eq!(run(&d, b"ab"), 3);
        assert!(d.tables.is_accepting(3) && !d.tables.can_continue(3));
        assert_eq!(run(&d, b"c"), DEAD);
        assert!(d.tables.can_continue(1) && d.tables.can_continue(2));
        assert_eq!(DenseDfa::empty().start, DEAD);
    }

    #[test]
    fn determinize_and_product() {
        let a = dfa("[a-c]+");
        let b = dfa("(?:ab)*");
        assert!(a.tables.is_accepting(run(&a, b"cab")));
        let p = product(&a, &b, 100).unwrap();
        assert!(p.tables.is_accepting(run(&p, b"abab")));
        assert_eq!(run(&p, b"c"), DEAD);
        assert!(!p.tables.is_accepting(p.start));
        assert_eq!(product(&a, &b, 1), Err(2));
        let limits = RegexLimits {
            dfa_states: 3,
            ..RegexLimits::default()
        };
        let hir = regex_syntax::parse("abcdef").unwrap();
        assert!(matches!(
            determinize(&hir, "abcdef", &limits),
            Err(GrammarError::LimitExceeded {
                limit: Limit::DfaStates,
                ..
            })
        ));
    }
}
