//! Grammar analyses shared by the transforms: validation, terminal
//! properties, least fixpoints over rules (generating, nullable),
//! reachability, and compaction of nonterminal ids.

use std::collections::HashMap;

use crate::dfa::TerminalDfa;
use crate::error::GrammarError;
use crate::ir::{Grammar, NtId, Rule, Symbol, Terminal};

/// What a terminal's language contains, as far as the transforms care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TerminalInfo {
    /// The terminal matches the empty string.
    pub matches_empty: bool,
    /// The terminal matches some non-empty string.
    pub matches_nonempty: bool,
}

impl TerminalInfo {
    /// The terminal's language is non-empty.
    pub fn generating(self) -> bool {
        self.matches_empty || self.matches_nonempty
    }
    /// The terminal matches only ε (it can be dropped from any rule).
    pub fn only_empty(self) -> bool {
        self.matches_empty && !self.matches_nonempty
    }
}

/// Properties of one terminal, exact (regexes with look-around assertions
/// are compiled to a DFA to decide them).
pub fn terminal_info(t: &Terminal) -> Result<TerminalInfo, GrammarError> {
    Ok(match t {
        Terminal::Literal(b) => TerminalInfo {
            matches_empty: b.is_empty(),
            matches_nonempty: !b.is_empty(),
        },
        Terminal::Class(c) => TerminalInfo {
            matches_empty: false,
            matches_nonempty: !c.is_empty(),
        },
        Terminal::And(..) | Terminal::Except(..) | Terminal::Avoid(..) => {
            let d = crate::TerminalDfa::compile(t)?;
            TerminalInfo {
                matches_empty: d.start() != crate::TerminalDfa::DEAD && d.is_accepting(d.start()),
                matches_nonempty: d.start() != crate::TerminalDfa::DEAD
                    && d.can_continue(d.start()),
            }
        }
        Terminal::Regex(re) => {
            // Fast path: the two questions are answered on the regex's
            // syntax tree (`LangShape`: text anchors exactly), once with
            // every other look-around assertion read as "always holds" (a
            // superset of the language) and once as "never holds" (a
            // subset). Where the two agree the answer is exact; only where
            // they differ (a multi-line anchor or word boundary decides
            // it) is the DFA built, which is exact but can be slow.
            let hir = regex_syntax::ParserBuilder::new()
                .unicode(true)
                .utf8(true)
                .build()
                .parse(re);
            let fast = hir.ok().and_then(|h| {
                let (over, under) = (LangShape::of(&h, true), LangShape::of(&h, false));
                let info = |s: LangShape| TerminalInfo {
                    matches_empty: s.has_empty(),
                    matches_nonempty: s.has_nonempty(),
                };
                (info(over) == info(under)).then(|| info(over))
            });
            match fast {
                Some(info) => info,
                None => slow_info(re, t)?,
            }
        }
    })
}

/// What a regex's language contains, read off its syntax tree, as the set
/// of *kinds* of match its parts can make (a bitset of eight): an empty
/// match, which may hold a text-start (`^`, `\A`) or text-end (`$`, `\z`)
/// assertion; or a non-empty match, which may need to begin at the start
/// of the text (an assertion before its first byte) or end at its end.
/// Kinds compose exactly under concatenation (an end assertion followed by
/// a byte, or a start assertion after one, cannot match), union and
/// repetition, so text anchors are decided exactly. The other assertions
/// (multi-line anchors, word boundaries) are read as always holding
/// (`looks_hold`: the kinds of a superset of the language) or never (of a
/// subset); a property on which both readings agree is exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LangShape(u8);

impl LangShape {
    const NONE: LangShape = LangShape(0);
    /// An empty match with no assertion.
    const EPSILON: LangShape = LangShape(1 << Self::empty(false, false));
    /// A non-empty match, free of position.
    const BYTES: LangShape = LangShape(1 << Self::nonempty(false, false));

    /// Bit of an empty match holding a start / end assertion.
    const fn empty(start: bool, end: bool) -> u8 {
        start as u8 | (end as u8) << 1
    }
    /// Bit of a non-empty match that must begin at the text's start / end
    /// at its end.
    const fn nonempty(start: bool, end: bool) -> u8 {
        4 | start as u8 | (end as u8) << 1
    }

    fn has_empty(self) -> bool {
        self.0 & 0x0F != 0
    }
    fn has_nonempty(self) -> bool {
        self.0 & 0xF0 != 0
    }

    /// Every kind of `x` followed by every kind of `y`.
    fn concat(self, other: LangShape) -> LangShape {
        let mut out = 0u8;
        for i in (0..8).filter(|i| self.0 >> i & 1 == 1) {
            for j in (0..8).filter(|j| other.0 >> j & 1 == 1) {
                let (ib, jb) = (i & 4 != 0, j & 4 != 0);
                let (is, ie, js, je) = (i & 1 != 0, i & 2 != 0, j & 1 != 0, j & 2 != 0);
                let k = match (ib, jb) {
                    (false, false) => Some(Self::empty(is || js, ie || je)),
                    // ε then bytes: an end assertion before a byte fails
                    (false, true) => (!ie).then(|| Self::nonempty(is || js, je)),
                    // bytes then ε: a start assertion after a byte fails
                    (true, false) => (!js).then(|| Self::nonempty(is, ie || je)),
                    (true, true) => (!ie && !js).then(|| Self::nonempty(is, je)),
                };
                if let Some(k) = k {
                    out |= 1 << k;
                }
            }
        }
        LangShape(out)
    }

    /// Recursion is bounded by regex-syntax's nesting limit (the parse
    /// fails past it, and that regex takes the DFA path's error).
    fn of(h: &regex_syntax::hir::Hir, looks_hold: bool) -> LangShape {
        use regex_syntax::hir::{Class, HirKind, Look};
        match h.kind() {
            HirKind::Empty => Self::EPSILON,
            HirKind::Literal(l) if l.0.is_empty() => Self::EPSILON,
            HirKind::Literal(_) => Self::BYTES,
            HirKind::Class(Class::Unicode(c)) if c.ranges().is_empty() => Self::NONE,
            HirKind::Class(Class::Bytes(c)) if c.ranges().is_empty() => Self::NONE,
            HirKind::Class(_) => Self::BYTES,
            HirKind::Look(Look::Start) => LangShape(1 << Self::empty(true, false)),
            HirKind::Look(Look::End) => LangShape(1 << Self::empty(false, true)),
            HirKind::Look(_) if looks_hold => Self::EPSILON,
            HirKind::Look(_) => Self::NONE,
            HirKind::Capture(c) => Self::of(&c.sub, looks_hold),
            HirKind::Repetition(r) => {
                let sub = Self::of(&r.sub, looks_hold);
                // kinds of exactly k copies, R_k = R_{k-1}·sub from R_0 =
                // ε, is eventually periodic (256 possible sets): find the
                // pre-period μ and period λ, then take the union of R_k
                // over min..=max through at most μ + λ distinct k
                let mut seq: Vec<LangShape> = vec![Self::EPSILON];
                let mut first = [usize::MAX; 256];
                first[Self::EPSILON.0 as usize] = 0;
                let (mu, lambda) = loop {
                    let next = seq[seq.len() - 1].concat(sub);
                    let at = first[next.0 as usize];
                    if at != usize::MAX {
                        break (at, seq.len() - at);
                    }
                    first[next.0 as usize] = seq.len();
                    seq.push(next);
                };
                let at = |k: u64| {
                    let k = k as usize;
                    if k < seq.len() {
                        seq[k]
                    } else {
                        seq[mu + (k - mu) % lambda]
                    }
                };
                let (min, max) = (r.min as u64, r.max.map_or(u64::MAX, u64::from));
                let last = max.min(min + seq.len() as u64);
                (min..=last).fold(Self::NONE, |acc, k| LangShape(acc.0 | at(k).0))
            }
            HirKind::Concat(parts) => parts
                .iter()
                .fold(Self::EPSILON, |acc, p| acc.concat(Self::of(p, looks_hold))),
            HirKind::Alternation(alts) => alts.iter().fold(Self::NONE, |acc, a| {
                LangShape(acc.0 | Self::of(a, looks_hold).0)
            }),
        }
    }
}

/// Most regexes whose DFA-derived [`TerminalInfo`] (or refusal) is
/// remembered by [`slow_info`].
const SLOW_INFO_MEMO: usize = 256;

/// [`TerminalInfo`] of a regex terminal from its DFA, remembered per regex
/// text (a pure function of it): the passes of one `simplify` — and
/// repeated simplifications of one grammar — ask about the same terminals,
/// and a hostile regex's DFA (or its refusal at a limit) can take a
/// second to build. The memo is process-wide, bounded by
/// [`SLOW_INFO_MEMO`] entries (cleared when full).
fn slow_info(re: &str, t: &Terminal) -> Result<TerminalInfo, GrammarError> {
    use std::sync::{Mutex, OnceLock};
    type Memo = Mutex<HashMap<String, Result<TerminalInfo, GrammarError>>>;
    static MEMO: OnceLock<Memo> = OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    let lock = || memo.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = lock().get(re) {
        return r.clone();
    }
    let r = TerminalDfa::compile(t).map(|d| TerminalInfo {
        matches_empty: d.is_accepting(d.start()),
        matches_nonempty: d.can_continue(d.start()),
    });
    let mut m = lock();
    if m.len() >= SLOW_INFO_MEMO {
        m.clear();
    }
    m.insert(re.to_string(), r.clone());
    r
}

/// [`terminal_info`] of every distinct terminal of `g`.
pub fn terminal_infos(g: &Grammar) -> Result<HashMap<Terminal, TerminalInfo>, GrammarError> {
    let mut m = HashMap::new();
    for r in &g.rules {
        for s in &r.rhs {
            if let Symbol::T(t) = s {
                if !m.contains_key(t) {
                    m.insert(
                        t.clone(),
                        terminal_info(t).map_err(|e| e.in_rule(g.name(r.lhs)))?,
                    );
                }
            }
        }
    }
    Ok(m)
}

/// Checks that every nonterminal id in `g` is in range.
pub fn validate(g: &Grammar) -> Result<(), GrammarError> {
    let n = g.num_nonterminals();
    let bad = |id: NtId| GrammarError::Invalid {
        reason: format!("nonterminal id {} out of range (have {n})", id.0),
    };
    if g.start.index() >= n {
        return Err(bad(g.start));
    }
    for r in &g.rules {
        if r.lhs.index() >= n {
            return Err(bad(r.lhs));
        }
        for s in &r.rhs {
            if let Symbol::Nt(b) = s {
                if b.index() >= n {
                    return Err(bad(*b));
                }
            }
        }
    }
    Ok(())
}

/// The least set `H` of nonterminals such that `A ∈ H` whenever some rule
/// `A → X₁…Xₙ` has every `Xᵢ` in `H` or a terminal with `term(Xᵢ)`.
/// Linear time (a counter per rule). With `term = generating` this is the
/// set of generating symbols; with `term = only_empty` the nullable ones.
pub fn least_fixpoint(g: &Grammar, term: impl Fn(&Terminal) -> bool) -> Vec<bool> {
    let n = g.num_nonterminals();
    let mut holds = vec![false; n];
    let mut missing: Vec<usize> = Vec::with_capacity(g.rules.len());
    let mut occurs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut queue: Vec<usize> = Vec::new();
    for (ri, r) in g.rules.iter().enumerate() {
        let mut m = 0;
        let mut dead = false;
        for s in &r.rhs {
            match s {
                Symbol::Nt(b) => {
                    m += 1;
                    occurs[b.index()].push(ri);
                }
                Symbol::T(t) => dead |= !term(t),
            }
        }
        missing.push(if dead { usize::MAX } else { m });
        if m == 0 && !dead && !holds[r.lhs.index()] {
            holds[r.lhs.index()] = true;
            queue.push(r.lhs.index());
        }
    }
    while let Some(b) = queue.pop() {
        for &ri in &occurs[b] {
            if missing[ri] == usize::MAX {
                continue;
            }
            missing[ri] -= 1;
            let a = g.rules[ri].lhs.index();
            if missing[ri] == 0 && !holds[a] {
                holds[a] = true;
                queue.push(a);
            }
        }
    }
    holds
}

/// Nonterminals reachable from the start symbol.
pub fn reachable(g: &Grammar) -> Vec<bool> {
    crate::gbnf::reachable(g)
}

/// Rebuilds `g` from `rules`, keeping only the nonterminals that are the
/// start symbol or occur in some rule (in their old order, with their
/// names), so that ids are dense again.
pub fn compact(g: &Grammar, rules: Vec<Rule>, start: NtId) -> Grammar {
    let n = g.num_nonterminals();
    let mut used = vec![false; n];
    used[start.index()] = true;
    for r in &rules {
        used[r.lhs.index()] = true;
        for s in &r.rhs {
            if let Symbol::Nt(b) = s {
                used[b.index()] = true;
            }
        }
    }
    let mut out = Grammar::new();
    let mut map = vec![NtId(u32::MAX); n];
    for i in 0..n {
        if used[i] {
            map[i] = out.add_nonterminal(g.name(NtId(i as u32)));
        }
    }
    for r in rules {
        let rhs = r
            .rhs
            .into_iter()
            .map(|s| match s {
                Symbol::Nt(b) => Symbol::Nt(map[b.index()]),
                t => t,
            })
            .collect();
        out.add_rule(map[r.lhs.index()], rhs);
    }
    out.start = map[start.index()];
    out
}

/// Removes duplicate productions, keeping the first occurrence of each.
pub fn dedupe_rules(rules: Vec<Rule>) -> Vec<Rule> {
    let mut seen = std::collections::HashSet::new();
    rules
        .into_iter()
        .filter(|r| seen.insert(r.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn via_dfa(t: &Terminal) -> Option<TerminalInfo> {
        let d = TerminalDfa::compile(t).ok()?;
        Some(TerminalInfo {
            matches_empty: d.is_accepting(d.start()),
            matches_nonempty: d.can_continue(d.start()),
        })
    }

    #[test]
    fn regex_info_fast_path_agrees_with_dfa() {
        for re in [
            "",
            "a",
            "a*",
            "a?b?",
            "[^\\x00-\\x{10FFFF}]",
            "a[^\\x00-\\x{10FFFF}]|",
            "(?:)",
            "a{0}",
            "a$b",
            "$",
            "^a|b$",
            "(?m)^",
        ] {
            let t = Terminal::Regex(re.to_string());
            assert_eq!(terminal_info(&t).ok(), via_dfa(&t), "{re}");
        }
    }

    proptest! {
        #[test]
        fn regex_info_agrees_with_dfa(parts in prop::collection::vec(prop_oneof![
            Just("a"), Just("b*"), Just("(?:)"), Just("("), Just(")"), Just("[^\\x00-\\x{10FFFF}]*"), Just("[^\\x00-\\x{10FFFF}]"), Just("|"), Just("c?"), Just("$"), Just("x{0}"),
        ], 0..5)) {
            let re: String = parts.concat();
            let t = Terminal::Regex(re.clone());
            prop_assert_eq!(terminal_info(&t).ok(), via_dfa(&t), "{}", re);
        }
    }
}
