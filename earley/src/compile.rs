//! Regex → [`ByteDfa`]: the entry points that pick the construction. A
//! long counted repetition of a prefix-free unit is built as a counter
//! times the unit's automaton ([`crate::counted`]); a regex without
//! look-around as a lazy automaton over its Thompson NFA (`lazy`: states
//! on first use); a regex with look-around by `regex-automata`'s NFA and
//! dense DFA ([`ByteDfa::from_regex_general`], which is also the eager
//! reference the others are tested against). All check the NFA size bound
//! first.
//!
//! Cost: the eager construction is one determinisation (bounded by
//! [`RegexLimits`]); the counted one is linear in the count; the lazy one
//! is the NFA at compile time and one subset-construction step per state
//! a mask or step first reaches.

use zapspec_grammar::dense::{self, DenseDfa, DenseTables};
use zapspec_grammar::{Limit, RegexLimits, Terminal};

use crate::error::EarleyError;
use crate::terminal::{limit_error, parse_regex, ByteDfa, DEAD};

impl ByteDfa {
    /// Compiles a terminal under the default [`RegexLimits`].
    pub fn compile(t: &Terminal) -> Result<Self, EarleyError> {
        let limits = RegexLimits::default();
        match t {
            Terminal::Except(re, names) => {
                let base = Self::from_regex_opts(&format!("(?:{re})"), &limits, false)?;
                Self::from_except(&base, names, &Self::regex_of(t), &limits)
            }
            Terminal::Avoid(re, strings) => {
                let base = Self::from_regex_opts(&format!("(?:{re})"), &limits, false)?;
                Self::from_avoid(&base, strings, &Self::regex_of(t), &limits)
            }
            _ => Self::from_regex(&Self::regex_of(t)),
        }
    }

    /// Compiles a regex (anchored at both ends; bytes, not chars) under the
    /// default [`RegexLimits`].
    pub fn from_regex(pattern: &str) -> Result<Self, EarleyError> {
        Self::from_regex_with(pattern, &RegexLimits::default())
    }

    /// Compiles a regex under explicit limits: a regex that does not parse
    /// is [`EarleyError::Terminal`]; an NFA, DFA or state count over a
    /// limit is [`EarleyError::LimitExceeded`] naming the limit and the
    /// terminal.
    pub fn from_regex_with(pattern: &str, limits: &RegexLimits) -> Result<Self, EarleyError> {
        Self::from_regex_opts(pattern, limits, true)
    }

    /// The automaton of [`Terminal::And`]: the byte strings matched by
    /// both `a` and `b` (`key` names it in errors). When `b` is a counted
    /// repetition ([`crate::counted`]) with a lower bound of at most
    /// 63, the product of `a`'s automaton (lazy, or counted, as
    /// [`Self::from_parsed`] builds it) with `b`'s skeleton times a
    /// counter (module `bounded`: `dfa_states` bounds the pairs, not the
    /// count); otherwise `b` is determinised and its product with that
    /// same automaton of `a` explored eagerly (at most `dfa_states`
    /// states).
    pub fn from_and(
        a: &regex_syntax::hir::Hir,
        b: &regex_syntax::hir::Hir,
        key: &str,
        limits: &RegexLimits,
    ) -> Result<Self, EarleyError> {
        Self::from_and_opts(a, b, key, limits, true)
    }

    /// [`ByteDfa::from_and`], choosing whether `a`'s side is built lazily
    /// (`lazy`, the default) or determinised at once (the ablation of [`crate::IndexConfig::lazy_dfas`]). The
    /// automaton is the same language either way.
    pub fn from_and_opts(
        a: &regex_syntax::hir::Hir,
        b: &regex_syntax::hir::Hir,
        key: &str,
        limits: &RegexLimits,
        lazy: bool,
    ) -> Result<Self, EarleyError> {
        let small = |h: &regex_syntax::hir::Hir| Self::small(h, key, limits);
        let too_many = |n: usize| intersection_too_large(key, limits, n);
        // either product reads `a` one representative byte per joint
        // class, at the pairs reachable from the start: built lazily (or
        // counted), `a` computes only those steps, where a dense
        // determinisation (regex-automata's, then re-tabled) builds every
        // state over its whole alphabet first; half the time on the
        // Unicode patterns of real schemas (`(?:\S+\s+){0,99}\S+` under
        // `maxLength`)
        let da = Self::from_parsed(a, key, limits, lazy)?;
        if let Some(parts) = crate::counted::parts(b, small) {
            if let Some(d) = crate::intersect::build(&da, &parts?, limits.dfa_states) {
                return d.map_err(too_many);
            }
        }
        let db = Self::from_parsed(b, key, limits, false)?;
        Self::product(&da, &db, limits.dfa_states).map_err(too_many)
    }

    /// A part of a counted repetition or intersection, determinised at
    /// once (after the NFA bound): a unit, a prefix, a tail, a side.
    fn small(
        h: &regex_syntax::hir::Hir,
        key: &str,
        limits: &RegexLimits,
    ) -> Result<Self, EarleyError> {
        Self::check_nfa_bound(h, key, limits)?;
        Self::from_hir(h, key, limits)
    }

    /// The product of two automata, explored eagerly from the pair of
    /// start states ([`zapspec_grammar::dense::product`]): at most
    /// `max_states` live states (else `Err(states explored)`).
    pub(crate) fn product(a: &ByteDfa, b: &ByteDfa, max_states: usize) -> Result<Self, usize> {
        zapspec_grammar::dense::product(a, b, max_states).map(Self::from_dense)
    }

    /// [`ByteDfa::from_regex_with`], choosing whether a regex without
    /// look-around is built lazily (`lazy`, the default) or determinised
    /// at once (the ablation of [`crate::IndexConfig::lazy_dfas`]).
    pub fn from_regex_opts(
        pattern: &str,
        limits: &RegexLimits,
        lazy: bool,
    ) -> Result<Self, EarleyError> {
        let err = |reason: String| EarleyError::Terminal {
            regex: pattern.to_string(),
            reason,
        };
        let hir = parse_regex(pattern).map_err(|e| err(e.to_string()))?;
        Self::from_parsed(&hir, pattern, limits, lazy)
    }

    /// [`ByteDfa::from_regex_opts`] of a regex already parsed: `hir` is the
    /// parse of `pattern` or an equivalent HIR (one the text was printed
    /// from, [`zapspec_grammar::Grammar::regex_hir`]); `pattern` names the
    /// terminal in errors.
    pub fn from_parsed(
        hir: &regex_syntax::hir::Hir,
        pattern: &str,
        limits: &RegexLimits,
        lazy: bool,
    ) -> Result<Self, EarleyError> {
        // A long counted repetition of a prefix-free unit: built as a
        // counter times the unit's automaton (module `counted`). Its states
        // are computed from the layout, not stored, and its cache entries
        // are numbered per distance to the bounds (`ByteDfa::ci_slot`):
        // `dfa_states` bounds the states it stores (the prefix, one count,
        // the tail), not the count, and the expansion's NFA bound does not
        // apply.
        let small = |h: &regex_syntax::hir::Hir| Self::small(h, pattern, limits);
        let too_many = |n: u64| {
            limit_error(
                pattern,
                Limit::DfaStates,
                limits.dfa_states,
                format!(
                    "the counted repetition's automaton stores {n} states, more than {}",
                    limits.dfa_states
                ),
            )
        };
        if let Some(d) = crate::counted::build(hir, limits.dfa_states, small, too_many) {
            return d;
        }
        // Astronomically large expansions are refused before anything is
        // built.
        Self::check_nfa_bound(hir, pattern, limits)?;
        // Without look-around, states are built on first use (module
        // `lazy`): exact liveness needs no assertion-free reading.
        if lazy && hir.properties().look_set().is_empty() {
            return Self::lazy_from_hir(hir, pattern, limits);
        }
        Self::from_hir(hir, pattern, limits)
    }
}

/// What a terminal's automaton is known to be before it is built: enough
/// for the compile-time analyses (productive and nullable symbols, the
/// items' initial states), read off the HIR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    /// The start state the built automaton will have: [`DEAD`](crate::ByteDfa::DEAD) when the
    /// language is empty, else 1 (the lazy construction's numbering).
    pub start: u32,
    /// The language holds the empty string.
    pub nullable: bool,
}

/// NFA states allowed for a deferred terminal: at most this many by the
/// estimate of [`nfa_states_estimate`], times its 32 bytes a state, leaves
/// a 4× margin under `RegexLimits::nfa_bytes` (its default 128 MiB: about a
/// million states). Larger terminals are built at compile time, where an
/// NFA over the limit is a compile error.
const DEFERRED_NFA_MARGIN: u128 = 32 * 4;

/// Most NFA states (by [`nfa_states_estimate`]) of a deferred terminal:
/// its build lands in the mask that first reaches it, so a larger one is
/// built at compile time instead (the estimate errs high; on MaskBench
/// this cap changes neither TTFM nor TBM against no cap).
const MAX_DEFERRED_NFA_STATES: u128 = 1 << 18;

impl ByteDfa {
    /// Whether `hir` may be built on first use instead of now (the
    /// deferred construction of `TermEntry`), and its [`Facts`]:
    /// only with `lazy`, without look-around, not of the counted shape
    /// ([`crate::counted`], built now), and with an NFA estimated far below
    /// `limits.nfa_bytes` (so that building it later cannot hit that limit)
    /// and small enough to build inside a mask (at most 2^18 states).
    /// Whether its language is empty and holds the empty string is read
    /// off the HIR (by its structure, exactly).
    pub fn deferrable(
        hir: &regex_syntax::hir::Hir,
        limits: &RegexLimits,
        lazy: bool,
    ) -> Option<Facts> {
        let props = hir.properties();
        if !lazy || !props.look_set().is_empty() || crate::counted::has_counted_shape(hir) {
            return None;
        }
        let states = nfa_states_estimate(hir);
        if states > MAX_DEFERRED_NFA_STATES
            || states.saturating_mul(DEFERRED_NFA_MARGIN) > limits.nfa_bytes as u128
        {
            return None;
        }
        let (nonempty, nullable) = emptiness(hir);
        Some(Facts {
            start: if nonempty { 1 } else { DEAD },
            nullable,
        })
    }

    /// Builds a terminal [`ByteDfa::deferrable`] accepted: the lazy
    /// construction. Should the NFA still exceed a limit, the terminal gets
    /// an automaton that matches nothing past its start state (so items at
    /// state [`Facts::start`] stay valid) and the error, which the matcher
    /// reports like a lazy DFA's overflow.
    pub(crate) fn build_deferred(
        hir: &regex_syntax::hir::Hir,
        pattern: &str,
        limits: &RegexLimits,
        facts: Facts,
    ) -> (Self, Option<EarleyError>) {
        match Self::lazy_from_hir(hir, pattern, limits) {
            Ok(d) => {
                debug_assert_eq!(d.start(), facts.start, "{pattern}");
                (d, None)
            }
            Err(e) => (Self::failed(facts), Some(e)),
        }
    }

    /// What a deferred build that failed leaves: an automaton that
    /// matches nothing past its start state (so items at state
    /// [`Facts::start`] stay valid).
    pub(crate) fn failed(facts: Facts) -> Self {
        let states = if facts.start == DEAD { 1 } else { 2 };
        Self::from_dense(DenseDfa {
            classes: [0u8; 256],
            tables: DenseTables::from_rows(1, vec![DEAD; states], vec![false; states]),
            start: facts.start,
        })
    }

    /// The automaton of a regex without some strings
    /// ([`zapspec_grammar::Terminal::Except`]): `base`'s product with the
    /// strings' trie ([`dense::except`], at most `dfa_states` states;
    /// `pattern` names the terminal in errors).
    pub(crate) fn from_except(
        base: &ByteDfa,
        names: &[Vec<u8>],
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<Self, EarleyError> {
        let d = dense::except_within(base, names, pattern, limits)
            .map_err(|e| EarleyError::of_terminal(e, pattern))?;
        Self::product_of_base(base, d, pattern, limits)
    }

    /// An eager product `d` of the lazy or dense `base` with another
    /// automaton: refused when `base`'s lazy automaton overflowed while
    /// the product explored it (the product then misses states).
    fn product_of_base(
        base: &ByteDfa,
        d: DenseDfa,
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<Self, EarleyError> {
        if base.overflowed() {
            return Err(EarleyError::LimitExceeded {
                limit: Limit::DfaStates,
                max: limits.dfa_states,
                place: format!("terminal {}", zapspec_grammar::limits::short_regex(pattern)),
                terminal: Some(pattern.to_string()),
                detail: "the regex's lazy automaton outgrew its cache".into(),
            });
        }
        Ok(Self::from_dense(d))
    }

    /// The byte strings `base` accepts that contain none of `strings`
    /// ([`Terminal::Avoid`]): the product with the strings' Aho–Corasick
    /// automaton, built at once (its states are about the strings' bytes
    /// times `base`'s), under `limits.dfa_states`.
    pub(crate) fn from_avoid(
        base: &ByteDfa,
        strings: &[Vec<u8>],
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<Self, EarleyError> {
        let d = dense::avoid_within(base, strings, pattern, limits)
            .map_err(|e| EarleyError::of_terminal(e, pattern))?;
        Self::product_of_base(base, d, pattern, limits)
    }

    /// [`Self::from_except`] for a deferred build: [`Self::failed`] and
    /// the error when it fails (as [`Self::build_deferred`]).
    pub(crate) fn build_except(
        base: &ByteDfa,
        names: &[Vec<u8>],
        pattern: &str,
        limits: &RegexLimits,
        facts: Facts,
    ) -> (Self, Option<EarleyError>) {
        match Self::from_except(base, names, pattern, limits) {
            Ok(d) => {
                debug_assert_eq!(d.start(), facts.start, "{pattern}");
                (d, None)
            }
            Err(e) => (Self::failed(facts), Some(e)),
        }
    }
}

/// Whether the language of a HIR without look-around is certainly
/// infinite, by structure: an unbounded repetition of a language with a
/// non-empty string, within concatenations of non-empty languages and
/// branches of alternations. `false` is "not known".
pub(crate) fn surely_infinite(hir: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Repetition(r) => {
            (r.max.is_none() && has_nonempty_string(&r.sub))
                || (r.max != Some(0) && surely_infinite(&r.sub))
        }
        HirKind::Capture(c) => surely_infinite(&c.sub),
        HirKind::Concat(hs) => hs.iter().all(|h| emptiness(h).0) && hs.iter().any(surely_infinite),
        HirKind::Alternation(hs) => hs.iter().any(surely_infinite),
        _ => false,
    }
}

/// Whether the language of a HIR without look-around holds a non-empty
/// string.
fn has_nonempty_string(hir: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => false,
        HirKind::Literal(l) => !l.0.is_empty(),
        HirKind::Class(Class::Bytes(c)) => !c.ranges().is_empty(),
        HirKind::Class(Class::Unicode(c)) => !c.ranges().is_empty(),
        HirKind::Repetition(r) => r.max != Some(0) && has_nonempty_string(&r.sub),
        HirKind::Capture(c) => has_nonempty_string(&c.sub),
        HirKind::Concat(hs) => {
            hs.iter().all(|h| emptiness(h).0) && hs.iter().any(has_nonempty_string)
        }
        HirKind::Alternation(hs) => hs.iter().any(has_nonempty_string),
    }
}

/// Whether the language of a HIR without look-around is non-empty, and
/// whether it holds the empty string: exact, by structure (not
/// `regex-syntax`'s `minimum_len`, which calls `(?:[a&&b])*` empty).
pub(crate) fn emptiness(hir: &regex_syntax::hir::Hir) -> (bool, bool) {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => (true, true),
        HirKind::Literal(l) => (true, l.0.is_empty()),
        HirKind::Class(Class::Bytes(c)) => (!c.ranges().is_empty(), false),
        HirKind::Class(Class::Unicode(c)) => (!c.ranges().is_empty(), false),
        HirKind::Repetition(r) => {
            let (ne, nu) = emptiness(&r.sub);
            (r.min == 0 || ne, r.min == 0 || nu)
        }
        HirKind::Capture(c) => emptiness(&c.sub),
        HirKind::Concat(hs) => hs.iter().fold((true, true), |(ne, nu), h| {
            let (a, b) = emptiness(h);
            (ne && a, nu && b)
        }),
        HirKind::Alternation(hs) => hs.iter().fold((false, false), |(ne, nu), h| {
            let (a, b) = emptiness(h);
            (ne || a, nu || b)
        }),
    }
}

/// An estimate of the Thompson NFA states of `hir` meant to err high:
/// literals a state a byte, a class as many states as its UTF-8 byte
/// sequences have bytes, counted repetitions multiplied out, one more per
/// alternative and repetition.
pub(crate) fn nfa_states_estimate(hir: &regex_syntax::hir::Hir) -> u128 {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 1,
        HirKind::Literal(l) => l.0.len() as u128,
        HirKind::Class(Class::Bytes(c)) => c.ranges().len() as u128 + 1,
        HirKind::Class(Class::Unicode(c)) => {
            let mut n = 1u128;
            for r in c.ranges() {
                for seq in regex_syntax::utf8::Utf8Sequences::new(r.start(), r.end()) {
                    n += seq.len() as u128;
                }
            }
            n
        }
        HirKind::Repetition(r) => {
            let copies = match r.max {
                Some(n) => n as u128,
                None => r.min as u128 + 1,
            };
            nfa_states_estimate(&r.sub)
                .saturating_add(1)
                .saturating_mul(copies.max(1))
        }
        HirKind::Capture(c) => nfa_states_estimate(&c.sub),
        HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().fold(1u128, |a, h| {
            a.saturating_add(nfa_states_estimate(h)).saturating_add(1)
        }),
    }
}

/// Heap bytes of a HIR, about: its nodes, literal bytes and class ranges
/// (what a deferred terminal holds until it is built; the cache bound
/// counts it).
pub(crate) fn hir_heap_bytes(hir: &regex_syntax::hir::Hir) -> usize {
    use regex_syntax::hir::{Class, HirKind};
    let node = std::mem::size_of::<regex_syntax::hir::Hir>();
    node + match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 0,
        HirKind::Literal(l) => l.0.len(),
        HirKind::Class(Class::Bytes(c)) => c.ranges().len() * 2,
        HirKind::Class(Class::Unicode(c)) => c.ranges().len() * 8,
        HirKind::Repetition(r) => hir_heap_bytes(&r.sub),
        HirKind::Capture(c) => hir_heap_bytes(&c.sub),
        HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().map(hir_heap_bytes).sum(),
    }
}

/// The typed limit of an intersection terminal `key` whose product passed
/// `limits.dfa_states` after exploring `n` pairs.
pub(crate) fn intersection_too_large(key: &str, limits: &RegexLimits, n: usize) -> EarleyError {
    limit_error(
        key,
        Limit::DfaStates,
        limits.dfa_states,
        format!(
            "the intersection's automaton has more than {} states ({n} explored)",
            limits.dfa_states
        ),
    )
}
