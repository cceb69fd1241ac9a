//! Regular families: nonterminals that recur through one another only as
//! the *last* symbol of their rules, compiled into one automaton terminal.
//!
//! [`crate::fuse`] writes a nonterminal as a regex when it recurs only
//! through itself (`N → α N | β` is `(α)*(β)`); a cycle through several
//! nonterminals cannot be written as a regex without state elimination,
//! whose text can grow exponentially. Grammars written from automata have
//! such cycles: a JSON Schema key region whose automaton has cycles through
//! several states (`patternProperties` or `oneOf` of unanchored patterns)
//! is a right-linear grammar, one nonterminal per state, one terminal per
//! character class. Left as rules, the parser runs a prediction and a
//! completion per character of every token it tries, and a mask walks the
//! whole vocabulary through the chart (hundreds of milliseconds on a
//! 200k-token vocabulary).
//!
//! A right-linear system denotes a regular language (Chomsky & Miller,
//! 1958): each nonterminal is an NFA state, each rule `N → α M` an
//! `α`-labelled path from `N` to `M`, each rule `N → α` a path from `N` to
//! the final state. This module finds the nonterminals that form such
//! systems ([`regular_families`]: the greatest set whose every rule is a
//! sequence of terminals and regex-fused nonterminals followed by at most
//! one member), and builds the system's Thompson NFA with `regex-automata`'s
//! NFA builder ([`Family::nfa`]); the engine determinises it lazily like
//! any terminal (module `zapspec_grammar::lazy`), so a token inside the region is classified
//! by the context-independent cache of §4.3 instead of byte-level parsing.
//!
//! Automata written as grammars need not be cyclic: a string's `pattern`
//! times its `minLength`/`maxLength`, or the trie of keys an object
//! excludes, is a DAG of one-letter rules that `fuse` cannot write as a
//! regex without unfolding its shared states. Such a system becomes a
//! family too when it is large ([`MIN_ACYCLIC_MEMBERS`]) and every edge
//! between its members is a letter ([`MAX_LETTER_BYTES`]); other acyclic
//! systems stay rules.
//!
//! Costs: the NFA has one union state per member plus one fragment per
//! distinct (body, target) pair, bounded by `RegexLimits::nfa_bytes`;
//! families larger than [`MAX_FAMILY_MEMBERS`] members or
//! [`MAX_FAMILY_TEXT`] characters of distinct bodies stay rules.

use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use regex_automata::nfa::thompson::{self, Builder, Transition};
use regex_automata::util::primitives::StateID;
use regex_syntax::hir::{Class, Hir, HirKind};
use zapspec_grammar::{Grammar, NtId, RegexLimits, Symbol, Terminal};

use crate::error::EarleyError;
use crate::terminal::{limit_error, parse_regex, ByteDfa};

/// Prefix of the text of a family terminal (not a valid regex, so no
/// regex path can compile it by mistake).
pub const FAMILY_PREFIX: &str = "(?zapspec-family)";

/// Families with more members stay rules.
pub const MAX_FAMILY_MEMBERS: usize = 4096;

/// Families whose distinct rule bodies are longer than this in total
/// (characters of regex text) stay rules.
pub const MAX_FAMILY_TEXT: usize = 200_000;

/// Families with more members that are not deterministic (each member's
/// rules start with pairwise disjoint bytes, none is a unit rule) are
/// determinised in full when compiled.
pub const MAX_NONDETERMINISTIC_MEMBERS: usize = 12;

/// Most DFA states a large nondeterministic family may have (built in
/// full when compiled).
pub const MAX_EXPLORED_STATES: usize = 4096;

/// Acyclic systems with fewer members stay rules (see
/// [`regular_families`]).
pub const MIN_ACYCLIC_MEMBERS: usize = 16;

/// Longest body (in bytes) of an acyclic system that is an automaton over
/// letters: one character in UTF-8, or a JSON escape (`\u00XX`).
pub const MAX_LETTER_BYTES: usize = 6;

/// Most copies of one repetition's body written into a family's NFA.
const MAX_UNROLL: u32 = 256;

/// One rule of a family, in the family's own numbering.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct FamilyRule {
    lhs: u32,
    /// Indices into [`Family::texts`], concatenated.
    body: Vec<u32>,
    /// The member that follows, or none (the rule ends the match).
    tail: Option<u32>,
}

/// A right-linear system entered at member 0 (module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Family {
    /// Distinct regex texts of the rule bodies' symbols.
    texts: Vec<String>,
    /// The grammar's HIR of each text, where it has one (a regex
    /// terminal's); the others are parsed when the automaton is built.
    hirs: Vec<Option<Arc<Hir>>>,
    rules: Vec<FamilyRule>,
    /// Determinise in full when compiled (a large nondeterministic system).
    explore: bool,
    members: u32,
    /// The terminal text: [`FAMILY_PREFIX`] and a canonical encoding (equal
    /// families of different grammars share one automaton).
    key: String,
}

impl Family {
    /// The text of the terminal standing for this family.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Number of members (nonterminals) reachable from the entry.
    pub fn members(&self) -> usize {
        self.members as usize
    }

    /// The family's automaton: its NFA ([`Family::nfa`]) determinised
    /// lazily (module `zapspec_grammar::lazy`).
    /// A large nondeterministic family (module docs) is determinised in
    /// full here, and refused ([`zapspec_grammar::Limit::DfaStates`]: the
    /// engine then keeps its rules) past [`MAX_EXPLORED_STATES`].
    pub fn dfa(&self, limits: &RegexLimits) -> Result<ByteDfa, EarleyError> {
        let d = ByteDfa::lazy_from_nfa(self.nfa(limits)?, limits);
        if self.explore && !d.explore(MAX_EXPLORED_STATES) {
            return Err(limit_error(
                &ByteDfa::regex_of(&Terminal::Regex(self.key.clone())),
                zapspec_grammar::Limit::DfaStates,
                MAX_EXPLORED_STATES,
                format!(
                    "a nondeterministic regular family of {} members determinises to more than {MAX_EXPLORED_STATES} states",
                    self.members
                ),
            ));
        }
        Ok(d)
    }

    /// The system's Thompson NFA (no captures, anchored at the entry),
    /// bounded by `limits.nfa_bytes`; `key` names the terminal in errors.
    pub fn nfa(&self, limits: &RegexLimits) -> Result<thompson::NFA, EarleyError> {
        let key = ByteDfa::regex_of(&Terminal::Regex(self.key.clone()));
        let build_err = |e: thompson::BuildError| match e.size_limit() {
            Some(max) => limit_error(&key, zapspec_grammar::Limit::NfaBytes, max, e.to_string()),
            None => EarleyError::Terminal {
                regex: key.clone(),
                reason: e.to_string(),
            },
        };
        let mut hirs = Vec::with_capacity(self.hirs.len());
        for (h, t) in self.hirs.iter().zip(&self.texts) {
            let h = match h {
                Some(h) => h.clone(),
                None => parse_text(t).map_err(|reason| EarleyError::Terminal {
                    regex: key.clone(),
                    reason,
                })?,
            };
            if !h.properties().look_set().is_empty() {
                return Err(EarleyError::Terminal {
                    regex: key.clone(),
                    reason: "look-around inside a regular family".into(),
                });
            }
            hirs.push(h);
        }
        let mut b = Builder::new();
        b.set_size_limit(Some(limits.nfa_bytes))
            .map_err(build_err)?;
        b.start_pattern().map_err(build_err)?;
        // Every member's union holds a dead alternative besides its rules:
        // the builder collapses a union of one alternative into an epsilon
        // edge and would loop forever on a cycle of them (unit rules
        // `N → M`, `M → N`); two alternatives keep it a state.
        let dead = b.add_fail().map_err(build_err)?;
        let mut unions = Vec::with_capacity(self.members as usize);
        for _ in 0..self.members {
            unions.push(b.add_union(vec![dead]).map_err(build_err)?);
        }
        let fin = b.add_match().map_err(build_err)?;
        let mut frags: HashMap<(&[u32], Option<u32>), StateID> = HashMap::default();
        for r in &self.rules {
            let target = r.tail.map_or(fin, |m| unions[m as usize]);
            let start = match frags.get(&(r.body.as_slice(), r.tail)) {
                Some(&s) => s,
                None => {
                    let s = if r.body.is_empty() {
                        target
                    } else {
                        let mut first = None;
                        let mut prev_end: Option<StateID> = None;
                        for &t in &r.body {
                            let (s, e) =
                                compile(&mut b, &hirs[t as usize], &key).map_err(|e| match e {
                                    Compile::Build(e) => build_err(*e),
                                    Compile::Refused(reason) => EarleyError::Terminal {
                                        regex: key.clone(),
                                        reason,
                                    },
                                })?;
                            match prev_end {
                                Some(pe) => b.patch(pe, s).map_err(build_err)?,
                                None => first = Some(s),
                            }
                            prev_end = Some(e);
                        }
                        if let Some(pe) = prev_end {
                            b.patch(pe, target).map_err(build_err)?;
                        }
                        first.unwrap_or(target)
                    };
                    frags.insert((r.body.as_slice(), r.tail), s);
                    s
                }
            };
            b.patch(unions[r.lhs as usize], start).map_err(build_err)?;
        }
        b.finish_pattern(unions[0]).map_err(build_err)?;
        b.build(unions[0], unions[0]).map_err(build_err)
    }
}

/// Why a fragment was not compiled.
enum Compile {
    Build(Box<thompson::BuildError>),
    Refused(String),
}

impl From<thompson::BuildError> for Compile {
    fn from(e: thompson::BuildError) -> Self {
        Compile::Build(Box::new(e))
    }
}

/// Thompson's construction of `h` into `b`: the fragment's start, and an
/// empty state at its end whose successor the caller patches.
fn compile(b: &mut Builder, h: &Hir, key: &str) -> Result<(StateID, StateID), Compile> {
    match h.kind() {
        HirKind::Empty => {
            let e = b.add_empty()?;
            Ok((e, e))
        }
        HirKind::Literal(lit) => {
            let end = b.add_empty()?;
            let mut next = end;
            for &byte in lit.0.iter().rev() {
                next = b.add_range(Transition {
                    start: byte,
                    end: byte,
                    next,
                })?;
            }
            Ok((next, end))
        }
        HirKind::Class(Class::Bytes(c)) => {
            let end = b.add_empty()?;
            let mut alts = Vec::new();
            for r in c.ranges() {
                alts.push(b.add_range(Transition {
                    start: r.start(),
                    end: r.end(),
                    next: end,
                })?);
            }
            Ok((union_of(b, alts)?, end))
        }
        HirKind::Class(Class::Unicode(c)) => {
            // The UTF-8 sequences of the ranges, built from their last
            // byte range backwards with equal suffixes shared (the
            // continuation ranges of a wide class repeat across its
            // sequences).
            let end = b.add_empty()?;
            let mut alts = Vec::new();
            let mut suffix: HashMap<(u8, u8, StateID), StateID> = HashMap::default();
            for r in c.ranges() {
                for seq in regex_syntax::utf8::Utf8Sequences::new(r.start(), r.end()) {
                    let mut next = end;
                    let ranges = seq.as_slice();
                    for (i, br) in ranges.iter().enumerate().rev() {
                        let key = (br.start, br.end, next);
                        next = match suffix.get(&key) {
                            // a first byte range starts its own alternative
                            Some(&s) if i > 0 => s,
                            _ => {
                                let s = b.add_range(Transition {
                                    start: br.start,
                                    end: br.end,
                                    next,
                                })?;
                                suffix.insert(key, s);
                                s
                            }
                        };
                    }
                    alts.push(next);
                }
            }
            Ok((union_of(b, alts)?, end))
        }
        HirKind::Look(_) => Err(Compile::Refused(format!(
            "look-around in {}",
            zapspec_grammar::limits::short_regex(key)
        ))),
        HirKind::Capture(c) => compile(b, &c.sub, key),
        HirKind::Concat(hs) => {
            let mut first = None;
            let mut prev: Option<StateID> = None;
            for x in hs {
                let (s, e) = compile(b, x, key)?;
                match prev {
                    Some(p) => b.patch(p, s)?,
                    None => first = Some(s),
                }
                prev = Some(e);
            }
            match (first, prev) {
                (Some(s), Some(e)) => Ok((s, e)),
                _ => {
                    let e = b.add_empty()?;
                    Ok((e, e))
                }
            }
        }
        HirKind::Alternation(hs) => {
            let end = b.add_empty()?;
            let mut alts = Vec::with_capacity(hs.len());
            for x in hs {
                let (s, e) = compile(b, x, key)?;
                b.patch(e, end)?;
                alts.push(s);
            }
            Ok((union_of(b, alts)?, end))
        }
        HirKind::Repetition(rep) => {
            let copies = rep.max.unwrap_or(rep.min).max(rep.min);
            if copies > MAX_UNROLL {
                return Err(Compile::Refused(format!(
                    "a repetition of {copies} inside a regular family"
                )));
            }
            let start = b.add_empty()?;
            let mut cur = start;
            for _ in 0..rep.min {
                let (s, e) = compile(b, &rep.sub, key)?;
                b.patch(cur, s)?;
                cur = e;
            }
            match rep.max {
                None => {
                    // cur → (sub → back to the loop) | exit
                    let lp = b.add_union(Vec::new())?;
                    b.patch(cur, lp)?;
                    let (s, e) = compile(b, &rep.sub, key)?;
                    b.patch(lp, s)?;
                    b.patch(e, lp)?;
                    let end = b.add_empty()?;
                    b.patch(lp, end)?;
                    Ok((start, end))
                }
                Some(max) => {
                    let end = b.add_empty()?;
                    for _ in rep.min..max {
                        let u = b.add_union(Vec::new())?;
                        b.patch(cur, u)?;
                        b.patch(u, end)?;
                        let (s, e) = compile(b, &rep.sub, key)?;
                        b.patch(u, s)?;
                        cur = e;
                    }
                    b.patch(cur, end)?;
                    Ok((start, end))
                }
            }
        }
    }
}

/// One state leading to every alternative (a fail state for none).
fn union_of(b: &mut Builder, alts: Vec<StateID>) -> Result<StateID, Compile> {
    Ok(match alts.len() {
        0 => b.add_fail()?,
        1 => alts[0],
        _ => b.add_union(alts)?,
    })
}

/// The family entered at each nonterminal that belongs to a regular
/// system (module docs) and is used outside it, given the regex of each nonterminal that
/// [`crate::fuse`] writes as a regex (`fused`), and nonterminals that must
/// stay rules (`blocked`: excluded, or holding a terminal that the counted
/// construction builds better alone). `None` elsewhere, and for families
/// over [`MAX_FAMILY_MEMBERS`] or [`MAX_FAMILY_TEXT`].
pub fn regular_families(
    g: &Grammar,
    fused: &[Option<String>],
    blocked: &[bool],
) -> Vec<Option<Arc<Family>>> {
    regular_families_with(g, fused, blocked, |_| None)
}

/// [`regular_families`] given the HIR of each fused nonterminal where the
/// caller has it (`fused_hir(m)`, the language of `fused[m]`): those are
/// not parsed from their text.
pub fn regular_families_with(
    g: &Grammar,
    fused: &[Option<String>],
    blocked: &[bool],
    mut fused_hir: impl FnMut(usize) -> Option<Hir>,
) -> Vec<Option<Arc<Family>>> {
    let n = g.num_nonterminals();
    let mut by_nt: Vec<Vec<&[Symbol]>> = vec![Vec::new(); n];
    for r in &g.rules {
        if let Some(v) = by_nt.get_mut(r.lhs.index()) {
            v.push(&r.rhs);
        }
    }
    let is_fused = |m: &NtId| fused.get(m.index()).is_some_and(|r| r.is_some());
    let text_of = |s: &Symbol| -> String {
        match s {
            Symbol::T(t) => ByteDfa::regex_of(t),
            Symbol::Nt(m) => format!("(?:{})", fused[m.index()].as_deref().unwrap_or("")),
        }
    };
    // Each symbol's HIR, resolved once for every use below (a regex
    // terminal's from the grammar, other texts parsed).
    let mut parsed: HashMap<Symbol, ParsedText> = HashMap::default();
    let mut hir_of = |s: &Symbol| -> ParsedText {
        parsed
            .entry(s.clone())
            .or_insert_with(|| match (s, grammar_hir(g, s)) {
                (_, Some(h)) => Ok(h),
                (Symbol::T(Terminal::Regex(r)), None) => parse_text(r),
                (Symbol::Nt(m), None) => match fused_hir(m.index()) {
                    Some(h) => Ok(Arc::new(h)),
                    None => parse_text(&text_of(s)),
                },
                _ => parse_text(&text_of(s)),
            })
            .clone()
    };
    // Fused nonterminals that are letter states (`N → "\"" | [a-z] M`:
    // every rule reads one letter, MAX_LETTER_BYTES, and some go on to a
    // nonterminal) stay states of a family rather than texts: a
    // chain of them fused is nested regexes, one per state, each as long
    // as the rest of the chain (quadratic text; a length bound's counter
    // written out this way costs thousands of NFA states).
    let mut max_len: HashMap<&Symbol, Option<usize>> = HashMap::default();
    let letter_state: Vec<bool> = (0..n)
        .map(|i| {
            let rules = &by_nt[i];
            is_fused(&NtId(i as u32))
                && !blocked.get(i).copied().unwrap_or(false)
                && rules
                    .iter()
                    .any(|rhs| matches!(rhs.last(), Some(Symbol::Nt(_))))
                && rules.iter().all(|rhs| {
                    let body = match rhs.split_last() {
                        Some((Symbol::Nt(_), body)) => body,
                        _ => rhs,
                    };
                    let mut total = 0usize;
                    body.iter().all(|s| {
                        let len = *max_len.entry(s).or_insert_with(|| {
                            hir_of(s).ok().and_then(|h| h.properties().maximum_len())
                        });
                        total = total.saturating_add(len.unwrap_or(usize::MAX));
                        total <= MAX_LETTER_BYTES
                    })
                })
        })
        .collect();
    // A nonterminal read as a text inside a family (fused, not a letter state).
    let is_text = |m: &NtId| is_fused(m) && !letter_state.get(m.index()).copied().unwrap_or(false);
    // Candidates: unblocked, not texts, with rules `α [M]` where α is made
    // of terminals and fused nonterminals.
    let mut member: Vec<bool> = (0..n)
        .map(|i| {
            !is_text(&NtId(i as u32))
                && !blocked.get(i).copied().unwrap_or(false)
                && !by_nt[i].is_empty()
                && by_nt[i].iter().all(|rhs| {
                    let body = match rhs.last() {
                        Some(Symbol::Nt(m)) if !is_text(m) => &rhs[..rhs.len() - 1],
                        _ => rhs,
                    };
                    body.iter().all(|s| match s {
                        // an intersection or an exception is no regex
                        Symbol::T(
                            Terminal::And(..) | Terminal::Except(..) | Terminal::Avoid(..),
                        ) => false,
                        Symbol::T(_) => true,
                        Symbol::Nt(m) => is_fused(m),
                    })
                })
        })
        .collect();
    // Greatest fixpoint: every unfused tail is a member.
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            if member[i]
                && by_nt[i].iter().any(|rhs| match rhs.last() {
                    Some(Symbol::Nt(m)) if !is_text(m) => {
                        !member.get(m.index()).copied().unwrap_or(false)
                    }
                    _ => false,
                })
            {
                member[i] = false;
                changed = true;
            }
        }
    }
    // Only members that recur through another member need a family (the
    // others were fused, or are too large to be a regex: left as they are).
    // Entries: members used outside the member set (the start symbol, or
    // in a rule of a non-member); the other members are internal states.
    let mut entry_of = vec![false; n];
    if let Some(e) = entry_of.get_mut(g.start.index()) {
        *e = true;
    }
    for r in &g.rules {
        if !member.get(r.lhs.index()).copied().unwrap_or(false) {
            for s in &r.rhs {
                if let Symbol::Nt(m) = s {
                    if let Some(e) = entry_of.get_mut(m.index()) {
                        *e = true;
                    }
                }
            }
        }
    }
    let mut out: Vec<Option<Arc<Family>>> = vec![None; n];
    for entry in 0..n {
        if !member[entry] || !entry_of[entry] {
            continue;
        }
        // Too many members: found by a walk over the tails alone.
        if reach_exceeds(entry, &by_nt, &is_text, MAX_FAMILY_MEMBERS) {
            continue;
        }
        // Members reachable from the entry, numbered breadth first.
        let mut num: HashMap<usize, u32> = HashMap::from_iter([(entry, 0)]);
        let mut order = vec![entry];
        let mut texts: Vec<String> = Vec::new();
        // the first symbol written as each text (its HIR resolved only for
        // a family that is kept, or checked below)
        let mut syms: Vec<&Symbol> = Vec::new();
        let mut text_id: HashMap<String, u32> = HashMap::default();
        // the text of a symbol already seen (no regex formatted twice)
        let mut sym_id: HashMap<&Symbol, u32> = HashMap::default();
        let mut text_len = 0usize;
        let mut rules = Vec::new();
        let mut i = 0;
        let mut too_big = false;
        while i < order.len() {
            let nt = order[i];
            i += 1;
            for rhs in &by_nt[nt] {
                let (body, tail) = match rhs.last() {
                    Some(Symbol::Nt(m)) if !is_text(m) => (&rhs[..rhs.len() - 1], Some(m.index())),
                    _ => (&rhs[..], None),
                };
                let tail = tail.map(|m| {
                    let next = order.len() as u32;
                    *num.entry(m).or_insert_with(|| {
                        order.push(m);
                        next
                    })
                });
                let mut ids = Vec::with_capacity(body.len());
                for s in body {
                    if let Some(&id) = sym_id.get(s) {
                        ids.push(id);
                        continue;
                    }
                    let t = text_of(s);
                    let next = texts.len() as u32;
                    let id = *text_id.entry(t.clone()).or_insert_with(|| {
                        text_len += t.len();
                        texts.push(t);
                        syms.push(s);
                        next
                    });
                    sym_id.insert(s, id);
                    ids.push(id);
                }
                rules.push(FamilyRule {
                    lhs: num[&nt],
                    body: ids,
                    tail,
                });
            }
            if order.len() > MAX_FAMILY_MEMBERS || text_len > MAX_FAMILY_TEXT {
                too_big = true;
                break;
            }
        }
        // A cycle through two or more members needs a family. An acyclic
        // system needs one only when it is an automaton over letters (a
        // string's pattern times its length bounds, a trie of excluded
        // keys: every edge between members at most MAX_LETTER_BYTES long,
        // at least MIN_ACYCLIC_MEMBERS members): as rules, every token crossing
        // its one-letter terminals is parsed byte by byte through the
        // chart, and a mask walks nearly the whole vocabulary that way.
        // Other acyclic systems (a flat object of fused strings) are what
        // `fuse` declined to write as one lexeme, and left as rules their
        // strings' cache entries are shared between the places they occur.
        if too_big
            || !(has_cycle(order.len(), &rules)
                || (order.len() >= MIN_ACYCLIC_MEMBERS
                    && letter_edges(&rules, |t| {
                        hir_of(syms[t as usize])
                            .ok()
                            .and_then(|h| h.properties().maximum_len())
                    })))
        {
            continue;
        }
        // The subset construction of a nondeterministic system can grow
        // exponentially with its members (and overflow at mask time, where
        // the rules would not): a large one that is not deterministic (an
        // automaton's grammar is; a union of them, as `oneOf` of patterns
        // writes, is not) is determinised in full when compiled, within
        // MAX_EXPLORED_STATES, or left as rules (`Family::dfa`).
        let explore = order.len() > MAX_NONDETERMINISTIC_MEMBERS && {
            let parsed: Vec<ParsedText> = syms.iter().map(|s| hir_of(s)).collect();
            !deterministic(order.len(), &parsed, &rules)
        };
        let hirs = syms.iter().map(|s| grammar_hir(g, s)).collect();
        // (writing to a `String` cannot fail)
        let mut key = String::from(FAMILY_PREFIX);
        for t in &texts {
            let _ = write!(key, "{}:{t}", t.len());
        }
        key.push('|');
        for r in &rules {
            let _ = write!(key, "{}", r.lhs);
            for b in &r.body {
                let _ = write!(key, ",{b}");
            }
            match r.tail {
                Some(t) => {
                    let _ = write!(key, ">{t};");
                }
                None => key.push_str(">;"),
            }
        }
        out[entry] = Some(Arc::new(Family {
            texts,
            hirs,
            rules,
            explore,
            members: order.len() as u32,
            key,
        }));
    }
    out
}

/// True when the members' tail edges (self-loops aside) have a cycle
/// (Kahn's algorithm leaves a member unremoved).
fn has_cycle(members: usize, rules: &[FamilyRule]) -> bool {
    let mut indeg = vec![0usize; members];
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); members];
    let mut seen = rustc_hash::FxHashSet::default();
    for r in rules {
        if let Some(t) = r.tail {
            if t != r.lhs && seen.insert((r.lhs, t)) {
                indeg[t as usize] += 1;
                out[r.lhs as usize].push(t);
            }
        }
    }
    let mut stack: Vec<usize> = (0..members).filter(|&i| indeg[i] == 0).collect();
    let mut removed = 0;
    while let Some(u) = stack.pop() {
        removed += 1;
        for &v in &out[u] {
            indeg[v as usize] -= 1;
            if indeg[v as usize] == 0 {
                stack.push(v as usize);
            }
        }
    }
    removed < members
}

/// True when every rule with a tail (an edge between members) has a body
/// matching only strings of at most [`MAX_LETTER_BYTES`] bytes: the
/// system is an automaton over letters. `false` when a text does not
/// parse.
fn letter_edges(rules: &[FamilyRule], mut max_len_of: impl FnMut(u32) -> Option<usize>) -> bool {
    let mut max_len: HashMap<u32, Option<usize>> = HashMap::default();
    rules.iter().filter(|r| r.tail.is_some()).all(|r| {
        let mut total = 0usize;
        for &t in &r.body {
            let len = *max_len.entry(t).or_insert_with(|| max_len_of(t));
            match len {
                Some(n) => total += n,
                None => return false,
            }
        }
        total <= MAX_LETTER_BYTES
    })
}

/// The HIR `g` holds for a symbol: a regex terminal's
/// ([`Grammar::regex_hir_shared`]); `None` for other symbols.
fn grammar_hir(g: &Grammar, s: &Symbol) -> Option<Arc<Hir>> {
    match s {
        Symbol::T(Terminal::Regex(r)) => g.regex_hir_shared(r).cloned(),
        _ => None,
    }
}

/// A text's HIR, or why it does not parse.
type ParsedText = Result<Arc<Hir>, String>;

/// The parse of a regex text (the engine's dialect: bytes, not UTF-8).
fn parse_text(text: &str) -> ParsedText {
    parse_regex(text).map(Arc::new).map_err(|e| e.to_string())
}

/// True when more than `max` members are reachable from `entry` through
/// tails.
fn reach_exceeds(
    entry: usize,
    by_nt: &[Vec<&[Symbol]>],
    is_text: &impl Fn(&NtId) -> bool,
    max: usize,
) -> bool {
    let mut seen = rustc_hash::FxHashSet::from_iter([entry]);
    let mut stack = vec![entry];
    while let Some(nt) = stack.pop() {
        for rhs in &by_nt[nt] {
            if let Some(Symbol::Nt(m)) = rhs.last() {
                if !is_text(m) && seen.insert(m.index()) {
                    if seen.len() > max {
                        return true;
                    }
                    stack.push(m.index());
                }
            }
        }
    }
    false
}

/// True when each member and input lead to at most one of the member's
/// rules once the first symbol of the rule's body is read, and no rule
/// with a tail can match the empty string: the subset construction then
/// stays within the members times their terminals' states. Two rules of a
/// member pass when their bodies begin with pairwise disjoint bytes, or
/// when their first symbols are *prefix-disjoint* (no string of one is a
/// prefix of, or equal to, a string of the other, [`prefix_disjoint`]):
/// the JSON-encoded letters of an automaton's classes share the escape
/// byte `\` but part at the next byte. `false` also for a text that does
/// not parse (the family is then left as rules).
fn deterministic(members: usize, parsed: &[ParsedText], rules: &[FamilyRule]) -> bool {
    let mut hirs: Vec<&Hir> = Vec::with_capacity(parsed.len());
    let mut firsts: Vec<([bool; 256], bool)> = Vec::with_capacity(parsed.len());
    for h in parsed {
        let Ok(h) = h else {
            return false;
        };
        let mut set = [false; 256];
        let nullable = first_bytes(h, &mut set);
        firsts.push((set, nullable));
        hirs.push(h);
    }
    // Per member: its rules' first-byte sets and first symbols; unit
    // rules `N → M` as edges, whose targets' rules count as N's.
    let mut by_member: Vec<Vec<([bool; 256], Option<u32>)>> = vec![Vec::new(); members];
    let mut units: Vec<Vec<u32>> = vec![Vec::new(); members];
    for r in rules {
        if let (true, Some(t)) = (r.body.is_empty(), r.tail) {
            units[r.lhs as usize].push(t);
            continue;
        }
        let mut set = [false; 256];
        let mut nullable = true;
        for &t in &r.body {
            let (f, n) = &firsts[t as usize];
            for b in 0..256 {
                set[b] |= f[b];
            }
            if !n {
                nullable = false;
                break;
            }
        }
        if nullable && r.tail.is_some() {
            return false;
        }
        // The first symbol decides the rule when it is not nullable.
        let first = r.body.first().copied().filter(|&t| !firsts[t as usize].1);
        by_member[r.lhs as usize].push((set, first));
    }
    let mut dfas: HashMap<u32, Option<ByteDfa>> = HashMap::default();
    let mut pairs: HashMap<(u32, u32), bool> = HashMap::default();
    for m in 0..members {
        let mut rs = by_member[m].clone();
        if !units[m].is_empty() {
            // the rules reached through unit edges (each member once)
            let mut seen = vec![false; members];
            seen[m] = true;
            let mut stack = units[m].clone();
            while let Some(u) = stack.pop() {
                let u = u as usize;
                if std::mem::replace(&mut seen[u], true) {
                    continue;
                }
                rs.extend(by_member[u].iter().cloned());
                stack.extend(units[u].iter().copied());
            }
        }
        for i in 0..rs.len() {
            for j in 0..i {
                let (a, fa) = &rs[i];
                let (b, fb) = &rs[j];
                if !(0..256).any(|x| a[x] && b[x]) {
                    continue;
                }
                let (Some(ta), Some(tb)) = (*fa, *fb) else {
                    return false;
                };
                if ta == tb {
                    return false;
                }
                let key = (ta.min(tb), ta.max(tb));
                let ok = *pairs.entry(key).or_insert_with(|| {
                    let mut dfa = |t: u32| {
                        dfas.entry(t)
                            .or_insert_with(|| letter_dfa(hirs[t as usize]))
                            .clone()
                    };
                    match (dfa(key.0), dfa(key.1)) {
                        (Some(x), Some(y)) => prefix_disjoint(&x, &y),
                        _ => false,
                    }
                });
                if !ok {
                    return false;
                }
            }
        }
    }
    true
}

/// Most states of one side of a [`prefix_disjoint`] check, and most
/// state pairs it visits; past them the check answers `false`.
const MAX_LETTER_STATES: usize = 256;

/// The lazy automaton of a short text for [`prefix_disjoint`] (`None`:
/// not short, or not built within the bound).
fn letter_dfa(h: &Hir) -> Option<ByteDfa> {
    if h.properties().maximum_len()? > 4 * MAX_LETTER_BYTES {
        return None;
    }
    let limits = RegexLimits {
        dfa_states: MAX_LETTER_STATES,
        ..RegexLimits::default()
    };
    ByteDfa::lazy_from_hir(h, "", &limits).ok()
}

/// True when no string of `x`'s language is a prefix of (or equal to) a
/// string of `y`'s, nor the other way round: a walk over the pairs of
/// live states from the two starts finds no pair where one side accepts
/// while the other is still live (both automata keep exact liveness).
fn prefix_disjoint(x: &ByteDfa, y: &ByteDfa) -> bool {
    use crate::terminal::DEAD;
    let (sx, sy) = (x.start(), y.start());
    if sx == DEAD || sy == DEAD {
        return true;
    }
    if x.is_accepting(sx) || y.is_accepting(sy) {
        return false;
    }
    let mut seen = rustc_hash::FxHashSet::from_iter([(sx, sy)]);
    let mut stack = vec![(sx, sy)];
    while let Some((p, q)) = stack.pop() {
        for b in 0..=255u8 {
            let (np, nq) = (x.next(p, b), y.next(q, b));
            if np == DEAD || nq == DEAD {
                continue;
            }
            if x.is_accepting(np) || y.is_accepting(nq) {
                return false;
            }
            if seen.insert((np, nq)) {
                if seen.len() > MAX_LETTER_STATES || x.overflowed() || y.overflowed() {
                    return false;
                }
                stack.push((np, nq));
            }
        }
    }
    !(x.overflowed() || y.overflowed())
}

/// Adds the bytes a match of `h` can start with to `out`; returns whether
/// `h` matches the empty string (look-around counted as empty).
fn first_bytes(h: &Hir, out: &mut [bool; 256]) -> bool {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => true,
        HirKind::Literal(l) => match l.0.first() {
            Some(&b) => {
                out[b as usize] = true;
                false
            }
            None => true,
        },
        HirKind::Class(Class::Bytes(c)) => {
            for r in c.ranges() {
                for b in r.start()..=r.end() {
                    out[b as usize] = true;
                }
            }
            false
        }
        HirKind::Class(Class::Unicode(c)) => {
            for r in c.ranges() {
                for seq in regex_syntax::utf8::Utf8Sequences::new(r.start(), r.end()) {
                    if let Some(f) = seq.as_slice().first() {
                        for b in f.start..=f.end {
                            out[b as usize] = true;
                        }
                    }
                }
            }
            false
        }
        HirKind::Capture(c) => first_bytes(&c.sub, out),
        HirKind::Repetition(r) => first_bytes(&r.sub, out) || r.min == 0,
        HirKind::Concat(hs) => hs.iter().all(|x| first_bytes(x, out)),
        HirKind::Alternation(hs) => {
            // every branch adds its bytes (no short circuit)
            let mut nullable = false;
            for x in hs {
                nullable |= first_bytes(x, out);
            }
            nullable
        }
    }
}
