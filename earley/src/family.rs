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
//! Costs: the NFA has one union state per member plus one fragment per
//! distinct (body, target) pair, bounded by `RegexLimits::nfa_bytes`;
//! families larger than [`MAX_FAMILY_MEMBERS`] members or
//! [`MAX_FAMILY_TEXT`] characters of distinct bodies stay rules.

use std::collections::HashMap;
use std::sync::Arc;

use regex_automata::nfa::thompson::{self, Builder, Transition};
use regex_automata::util::primitives::StateID;
use regex_syntax::hir::{Class, Hir, HirKind};
use zapspec_grammar::{Grammar, NtId, RegexLimits, Symbol, Terminal};

use crate::error::EarleyError;
use crate::terminal::{limit_error, ByteDfa};

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
        let mut hirs = Vec::with_capacity(self.texts.len());
        for t in &self.texts {
            let h = regex_syntax::ParserBuilder::new()
                .utf8(false)
                .build()
                .parse(t)
                .map_err(|e| EarleyError::Terminal {
                    regex: key.clone(),
                    reason: e.to_string(),
                })?;
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
        let mut frags: HashMap<(&[u32], Option<u32>), StateID> = HashMap::new();
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
            let end = b.add_empty()?;
            let mut alts = Vec::new();
            for r in c.ranges() {
                for seq in regex_syntax::utf8::Utf8Sequences::new(r.start(), r.end()) {
                    let mut next = end;
                    for br in seq.as_slice().iter().rev() {
                        next = b.add_range(Transition {
                            start: br.start,
                            end: br.end,
                            next,
                        })?;
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
    let n = g.num_nonterminals();
    let mut by_nt: Vec<Vec<&[Symbol]>> = vec![Vec::new(); n];
    for r in &g.rules {
        if let Some(v) = by_nt.get_mut(r.lhs.index()) {
            v.push(&r.rhs);
        }
    }
    let is_fused = |m: &NtId| fused.get(m.index()).is_some_and(|r| r.is_some());
    // Candidates: unfused, unblocked, with rules `α [M]` where α is made of
    // terminals and fused nonterminals.
    let mut member: Vec<bool> = (0..n)
        .map(|i| {
            !is_fused(&NtId(i as u32))
                && !blocked.get(i).copied().unwrap_or(false)
                && !by_nt[i].is_empty()
                && by_nt[i].iter().all(|rhs| {
                    let body = match rhs.last() {
                        Some(Symbol::Nt(m)) if !is_fused(m) => &rhs[..rhs.len() - 1],
                        _ => rhs,
                    };
                    body.iter().all(|s| match s {
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
                    Some(Symbol::Nt(m)) if !is_fused(m) => {
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
    let text_of = |s: &Symbol| -> String {
        match s {
            Symbol::T(t) => ByteDfa::regex_of(t),
            Symbol::Nt(m) => format!("(?:{})", fused[m.index()].as_deref().unwrap_or("")),
        }
    };
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
        if reach_exceeds(entry, &by_nt, &is_fused, MAX_FAMILY_MEMBERS) {
            continue;
        }
        // Members reachable from the entry, numbered breadth first.
        let mut num: HashMap<usize, u32> = HashMap::from([(entry, 0)]);
        let mut order = vec![entry];
        let mut texts: Vec<String> = Vec::new();
        let mut text_id: HashMap<String, u32> = HashMap::new();
        // the text of a symbol already seen (no regex formatted twice)
        let mut sym_id: HashMap<&Symbol, u32> = HashMap::new();
        let mut text_len = 0usize;
        let mut rules = Vec::new();
        let mut i = 0;
        let mut too_big = false;
        while i < order.len() {
            let nt = order[i];
            i += 1;
            for rhs in &by_nt[nt] {
                let (body, tail) = match rhs.last() {
                    Some(Symbol::Nt(m)) if !is_fused(m) => (&rhs[..rhs.len() - 1], Some(m.index())),
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
        // Only a cycle through two or more members needs a family: an
        // acyclic system (a flat object of fused strings) is what `fuse`
        // declined to write as one lexeme, and left as rules its strings'
        // cache entries are shared between the places they occur.
        if too_big || !has_cycle(order.len(), &rules) {
            continue;
        }
        // The subset construction of a nondeterministic system can grow
        // exponentially with its members (and overflow at mask time, where
        // the rules would not): a large one that is not deterministic (an
        // automaton's grammar is; a union of them, as `oneOf` of patterns
        // writes, is not) is determinised in full when compiled, within
        // MAX_EXPLORED_STATES, or left as rules (`Family::dfa`).
        let explore = order.len() > MAX_NONDETERMINISTIC_MEMBERS
            && !deterministic(order.len(), &texts, &rules);
        let mut key = String::from(FAMILY_PREFIX);
        for t in &texts {
            key.push_str(&format!("{}:{t}", t.len()));
        }
        key.push('|');
        for r in &rules {
            key.push_str(&format!("{}", r.lhs));
            for b in &r.body {
                key.push_str(&format!(",{b}"));
            }
            match r.tail {
                Some(t) => key.push_str(&format!(">{t};")),
                None => key.push_str(">;"),
            }
        }
        out[entry] = Some(Arc::new(Family {
            texts,
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
    let mut seen = std::collections::HashSet::new();
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

/// True when more than `max` members are reachable from `entry` through
/// tails.
fn reach_exceeds(
    entry: usize,
    by_nt: &[Vec<&[Symbol]>],
    is_fused: &impl Fn(&NtId) -> bool,
    max: usize,
) -> bool {
    let mut seen = std::collections::HashSet::from([entry]);
    let mut stack = vec![entry];
    while let Some(nt) = stack.pop() {
        for rhs in &by_nt[nt] {
            if let Some(Symbol::Nt(m)) = rhs.last() {
                if !is_fused(m) && seen.insert(m.index()) {
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

/// True when every member's rules begin with pairwise disjoint bytes and
/// no rule with a tail can match the empty string (so each member and
/// byte lead to at most one rule: the subset construction stays within
/// the members times their terminals' states). `false` also for a text
/// that does not parse (the family is then left as rules).
fn deterministic(members: usize, texts: &[String], rules: &[FamilyRule]) -> bool {
    let mut firsts: Vec<([bool; 256], bool)> = Vec::with_capacity(texts.len());
    for t in texts {
        let Ok(h) = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(t)
        else {
            return false;
        };
        let mut set = [false; 256];
        let nullable = first_bytes(&h, &mut set);
        firsts.push((set, nullable));
    }
    let mut seen = vec![[false; 256]; members];
    for r in rules {
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
        let acc = &mut seen[r.lhs as usize];
        for b in 0..256 {
            if set[b] {
                if acc[b] {
                    return false;
                }
                acc[b] = true;
            }
        }
    }
    true
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
