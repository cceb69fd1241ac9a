//! Terminals as byte DFAs.
//!
//! Every [`Terminal`] of the IR is compiled into a [`TerminalDfa`]: a
//! deterministic automaton over *bytes* that recognises exactly the byte
//! strings the terminal matches (a full match, anchored at both ends).
//! ZapFormat (§4.1) implements terminals "as finite state machines (FSM) for
//! matching"; this module is that FSM for the reference recognizer and the
//! JSON Schema compiler, and its eager construction ([`crate::dense`]) and
//! lazy one ([`crate::lazy`]) are the ones the Earley engine's `ByteDfa`
//! is built by.
//!
//! * [`Terminal::Literal`] becomes a chain of states.
//! * [`Terminal::Class`] becomes the UTF-8 byte automaton of its character
//!   set (one scalar value, 1–4 bytes).
//! * [`Terminal::Regex`] is parsed by `regex-syntax` (Unicode mode, so `.`
//!   and classes match whole UTF-8 sequences) and determinised by
//!   [`crate::dense::determinize`], the workspace's one eager builder
//!   (`regex-automata`'s NFA and dense DFA, anchored at the start;
//!   acceptance read off the end-of-input transition so that `$`-style
//!   look-arounds at the end are honoured).
//! * [`Terminal::And`] is the product of its two regexes' automata, explored
//!   eagerly ([`TerminalDfa::intersection`], [`crate::dense::product`];
//!   bounded by `dfa_states`).
//! * [`Terminal::Except`] is the product of its regex's automaton with the
//!   trie of the excluded strings ([`crate::dense::except`]; bounded the
//!   same way).
//! * [`Terminal::Avoid`] is the product of its regex's automaton with the
//!   Aho–Corasick automaton of the avoided strings ([`crate::dense::avoid`];
//!   bounded the same way).
//!
//! The result is then *re-tabled* into the compact layout of
//! [`crate::dense::DenseTables`]: states are renumbered densely with `0` =
//! [`TerminalDfa::DEAD`], every state that cannot reach an accepting state
//! is merged into `DEAD` (so [`TerminalDfa::can_continue`] is exact: a
//! non-dead state always has a completion), and transitions are stored per
//! byte equivalence class. The hot path [`TerminalDfa::next`] is two array
//! loads.
//!
//! [`TerminalDfa::lazy_regex`] builds the same automaton state by state
//! ([`crate::lazy`]): the NFA at once, each DFA state when a transition
//! first reaches it. Use it where a caller visits a small part of a large
//! automaton (a product of key patterns stepped by one character of each
//! class); the queries are the same, state ids are stable, and a state
//! past [`RegexLimits::dfa_states`] answers `DEAD` and sets
//! [`TerminalDfa::overflowed`].

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir};

use crate::dense::{self, ByteAutomaton, DenseDfa, DenseTables};
use crate::error::GrammarError;
use crate::ir::{CharClass, Terminal};
use crate::lazy::LazyTables;
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
    /// Number of byte classes.
    stride: usize,
    tables: Tables,
    start: u32,
}

/// The states of a [`TerminalDfa`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum Tables {
    /// Built at once ([`crate::dense`]).
    Dense(DenseTables),
    /// Built on first use ([`TerminalDfa::lazy_regex`]).
    Lazy(LazyRef),
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
    pub const DEAD: u32 = dense::DEAD;

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
            Terminal::Except(re, names) => dense::except_within(
                &Self::regex_with(re, limits)?,
                names,
                &t.to_string(),
                limits,
            )
            .map(Self::from_dense),
            Terminal::Avoid(re, strings) => dense::avoid_within(
                &Self::regex_with(re, limits)?,
                strings,
                &t.to_string(),
                limits,
            )
            .map(Self::from_dense),
        }
    }

    /// An eager automaton in this type.
    fn from_dense(d: DenseDfa) -> TerminalDfa {
        TerminalDfa {
            classes: Box::new(d.classes),
            stride: d.tables.stride(),
            tables: Tables::Dense(d.tables),
            start: d.start,
        }
    }

    /// The product automaton of `a` and `b`: the byte strings both match
    /// ([`Terminal::And`]), built eagerly ([`dense::product`]: the
    /// reachable pairs of states, breadth first; pairs that cannot reach a
    /// pair accepting in both are merged into `DEAD`). At most
    /// `limits.dfa_states` pairs, else [`GrammarError::LimitExceeded`]
    /// naming `place`.
    pub fn intersection(
        a: &TerminalDfa,
        b: &TerminalDfa,
        place: &str,
        limits: &RegexLimits,
    ) -> Result<TerminalDfa, GrammarError> {
        dense::product(a, b, limits.dfa_states)
            .map(Self::from_dense)
            .map_err(|_| GrammarError::LimitExceeded {
                limit: Limit::DfaStates,
                max: limits.dfa_states,
                place: format!("terminal {}", short_regex(place)),
                detail: format!(
                    "the product of the two regexes has more than {} states",
                    limits.dfa_states
                ),
            })
    }

    /// The chain automaton of a byte string, built directly in the final
    /// layout (linear in the literal: grammars with tens of thousands of
    /// literals, such as a large `enum`, compile quickly).
    pub fn literal(bytes: &[u8]) -> TerminalDfa {
        let n = bytes.len();
        // Class 0: bytes the literal does not use (dead everywhere); one
        // class per distinct byte of the literal.
        let mut classes = [0u8; 256];
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
        Self::from_dense(DenseDfa {
            classes,
            tables: DenseTables::from_rows(stride, table, accepting),
            start: 1,
        })
    }

    /// [`Self::literal`] through the general construction
    /// ([`DenseDfa::trimmed`], one class per byte).
    fn literal_general(bytes: &[u8]) -> TerminalDfa {
        let n = bytes.len();
        // state i+1 = "read bytes[..i]"
        let mut raw = vec![Self::DEAD; (n + 1) * 256];
        for (i, &b) in bytes.iter().enumerate() {
            raw[i * 256 + b as usize] = (i + 2) as u32;
        }
        let acc: Vec<bool> = (0..=n).map(|i| i == n).collect();
        let mut classes = [0u8; 256];
        for (b, c) in classes.iter_mut().enumerate() {
            *c = b as u8;
        }
        Self::from_dense(DenseDfa::trimmed(classes, 256, &raw, &acc, 1))
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
        dense::check_nfa_bound(hir, pattern, limits)?;
        let nfa = dense::thompson(hir, pattern, limits)?;
        let (classes, stride, tables, start) = LazyTables::for_nfa(nfa, limits);
        Ok(TerminalDfa {
            classes: Box::new(classes),
            stride,
            tables: Tables::Lazy(LazyRef(Arc::new(tables))),
            start,
        })
    }

    /// True when a lazy automaton refused a state for its
    /// [`RegexLimits::dfa_states`] bound: answers computed since may have
    /// left out matches (never true of an eager automaton, whose bound is
    /// checked when it is built).
    pub fn overflowed(&self) -> bool {
        match &self.tables {
            Tables::Dense(_) => false,
            Tables::Lazy(l) => l.0.overflowed(),
        }
    }

    /// True when states are built on first use.
    pub fn is_lazy(&self) -> bool {
        matches!(self.tables, Tables::Lazy(_))
    }

    /// The automaton of the empty language.
    pub fn empty() -> TerminalDfa {
        Self::from_dense(DenseDfa::empty())
    }

    /// The eager construction ([`dense::determinize`]) after the NFA
    /// bound.
    fn from_hir(
        hir: &Hir,
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<TerminalDfa, GrammarError> {
        dense::check_nfa_bound(hir, pattern, limits)?;
        dense::determinize(hir, pattern, limits).map(Self::from_dense)
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
        match &self.tables {
            Tables::Dense(t) => t.next(state, c),
            Tables::Lazy(l) => l.0.next(state, c),
        }
    }

    /// Whether the bytes read so far are a full match.
    #[inline]
    pub fn is_accepting(&self, state: u32) -> bool {
        match &self.tables {
            Tables::Dense(t) => t.is_accepting(state),
            Tables::Lazy(l) => l.0.is_accepting(state),
        }
    }

    /// Whether some byte leads to a non-dead state (equivalently, since
    /// states that cannot reach acceptance are merged into `DEAD`: whether
    /// some non-empty continuation is a full match).
    #[inline]
    pub fn can_continue(&self, state: u32) -> bool {
        match &self.tables {
            Tables::Dense(t) => t.can_continue(state),
            Tables::Lazy(l) => l.0.can_continue(state),
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
        match &self.tables {
            Tables::Dense(t) => t.num_states(),
            Tables::Lazy(l) => l.0.num_states(),
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
        256 + match &self.tables {
            Tables::Dense(t) => t.heap_bytes(),
            Tables::Lazy(l) => l.0.heap_bytes(),
        }
    }
}

impl ByteAutomaton for TerminalDfa {
    fn start(&self) -> u32 {
        self.start
    }
    fn next(&self, s: u32, byte: u8) -> u32 {
        TerminalDfa::next(self, s, byte)
    }
    fn is_accepting(&self, s: u32) -> bool {
        TerminalDfa::is_accepting(self, s)
    }
    fn byte_class(&self, byte: u8) -> u8 {
        self.classes[byte as usize]
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
    use regex_automata::{meta::Regex, Input};

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
