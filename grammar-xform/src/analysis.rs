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
        Terminal::Regex(re) => {
            // Fast path: without look-around assertions, a known minimum
            // length means every part of the regex can match, so the bounds
            // are exact. `None` is ambiguous (regex-syntax also returns it for
            // `[]|a`), so that case, like look-arounds, compiles the DFA,
            // which is exact but slow.
            let hir = regex_syntax::ParserBuilder::new()
                .unicode(true)
                .utf8(true)
                .build()
                .parse(re);
            let fast = hir
                .ok()
                .filter(|h| h.properties().look_set().is_empty())
                .and_then(|h| {
                    let p = h.properties();
                    p.minimum_len().map(|min| TerminalInfo {
                        matches_empty: min == 0,
                        matches_nonempty: p.maximum_len() != Some(0),
                    })
                });
            match fast {
                Some(info) => info,
                None => slow_info(re, t)?,
            }
        }
    })
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
