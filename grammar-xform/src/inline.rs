//! Size-reducing rewrites that keep the language: unit-rule elimination,
//! inlining of small or singly-used nonterminals, and de-duplication.
//!
//! These complement ZapFormat §4.5's useless- and nullable-rule
//! elimination ("reducing the grammar size without affecting its
//! expressiveness"): grammars produced by generators such as JSON Schema
//! compilers are full of chains `A → B` and one-off helper nonterminals,
//! each of which costs the Earley parser a predict/complete round trip.
//! Left recursion is never removed.
//!
//! * [`eliminate_units`]: Hopcroft & Ullman's unit-production removal
//!   (Theorem 4.4): for every unit pair `A ⇒* B` (through rules `X → Y`),
//!   `A` receives `B`'s non-unit rules, and unit rules disappear. A
//!   nonterminal whose closure would bring more than
//!   [`InlineConfig::max_unit_rules_per_nt`] rules keeps its original rules
//!   (each nonterminal's language is preserved either way).
//! * [`inline_nonterminals`]: a non-start, non-self-recursive nonterminal is
//!   replaced by its definition where it is used if it has a single rule of
//!   at most [`InlineConfig::max_inline_len`] symbols, or if it is used
//!   exactly once and the user ends up with at most
//!   [`InlineConfig::max_alternatives`] alternatives (default: only
//!   single-rule ones; see that field for why).
//! * [`dedupe`]: duplicate productions are dropped and nonterminals with
//!   identical sets of alternatives are merged (to a fixpoint).

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::analysis::{compact, dedupe_rules, validate};
use crate::error::GrammarError;
use crate::ir::{Grammar, NtId, Rule, Symbol};

/// Limits of the inlining rewrites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineConfig {
    /// Unit elimination: the most rules one nonterminal may receive from its
    /// unit closure; beyond it the nonterminal keeps its unit rules.
    pub max_unit_rules_per_nt: usize,
    /// Inline a nonterminal with a single rule of at most this many symbols
    /// at every use.
    pub max_inline_len: usize,
    /// Inline a nonterminal used once if its user then has at most this
    /// many alternatives (a once-used nonterminal with a single rule is
    /// always inlined). Default 0: inlining a multi-alternative nonterminal
    /// into the middle of a rule duplicates the rule's prefix, which can
    /// increase Earley parsing work (recorded in
    /// `examples/results/history/grammar.md`).
    pub max_alternatives: usize,
}

impl Default for InlineConfig {
    fn default() -> Self {
        InlineConfig {
            max_unit_rules_per_nt: 64,
            max_inline_len: 4,
            max_alternatives: 0,
        }
    }
}

fn alternatives(g: &Grammar) -> Vec<Vec<Vec<Symbol>>> {
    let mut alts = vec![Vec::new(); g.num_nonterminals()];
    for r in &g.rules {
        alts[r.lhs.index()].push(r.rhs.clone());
    }
    alts
}

fn unit_target(rhs: &[Symbol]) -> Option<NtId> {
    match rhs {
        [Symbol::Nt(b)] => Some(*b),
        _ => None,
    }
}

/// Removes unit rules `A → B` (see the module docs).
pub fn eliminate_units(g: &Grammar, cfg: &InlineConfig) -> Result<Grammar, GrammarError> {
    validate(g)?;
    let alts = alternatives(g);
    let n = alts.len();
    let mut new_alts: Vec<Vec<Vec<Symbol>>> = vec![Vec::new(); n];
    for a in 0..n {
        if !alts[a].iter().any(|r| unit_target(r).is_some()) {
            new_alts[a] = alts[a].clone();
            continue;
        }
        // unit closure of a (including a), in discovery order
        let mut seen = vec![false; n];
        let mut order = vec![a];
        seen[a] = true;
        let mut i = 0;
        while i < order.len() {
            let b = order[i];
            i += 1;
            for r in &alts[b] {
                if let Some(c) = unit_target(r) {
                    if !seen[c.index()] {
                        seen[c.index()] = true;
                        order.push(c.index());
                    }
                }
            }
        }
        let cost: usize = order
            .iter()
            .map(|&b| alts[b].iter().filter(|r| unit_target(r).is_none()).count())
            .sum();
        if cost > cfg.max_unit_rules_per_nt.max(alts[a].len()) {
            new_alts[a] = alts[a].clone();
            continue;
        }
        for &b in &order {
            for r in &alts[b] {
                if unit_target(r).is_none() {
                    new_alts[a].push(r.clone());
                }
            }
        }
    }
    let rules = new_alts
        .into_iter()
        .enumerate()
        .flat_map(|(a, rs)| {
            rs.into_iter().map(move |rhs| Rule {
                lhs: NtId(a as u32),
                rhs,
            })
        })
        // a kept unit self-loop A → A adds nothing
        .filter(|r| unit_target(&r.rhs) != Some(r.lhs))
        .collect();
    Ok(compact(g, dedupe_rules(rules), g.start))
}

/// Inlines small and singly-used nonterminals (see the module docs).
pub fn inline_nonterminals(g: &Grammar, cfg: &InlineConfig) -> Result<Grammar, GrammarError> {
    validate(g)?;
    let mut alts = alternatives(g);
    let n = alts.len();
    // users[b] = nonterminals with a rule mentioning b
    let mut users: Vec<HashSet<usize>> = vec![HashSet::new(); n];
    for (a, rs) in alts.iter().enumerate() {
        for r in rs {
            for s in r {
                if let Symbol::Nt(b) = s {
                    users[b.index()].insert(a);
                }
            }
        }
    }
    let mut queue: Vec<usize> = (0..n).rev().collect();
    let mut queued = vec![true; n];
    let start = g.start.index();
    while let Some(b) = queue.pop() {
        queued[b] = false;
        if b == start || users[b].is_empty() || users[b].contains(&b) {
            continue;
        }
        let occurrences: usize = users[b]
            .iter()
            .map(|&a| {
                alts[a]
                    .iter()
                    .flatten()
                    .filter(|s| **s == Symbol::Nt(NtId(b as u32)))
                    .count()
            })
            .sum();
        let single_short = alts[b].len() == 1 && alts[b][0].len() <= cfg.max_inline_len;
        let once = occurrences == 1 && {
            let a = *users[b].iter().next().expect("one user");
            alts[a].len() + alts[b].len() <= cfg.max_alternatives + 1 || alts[b].len() == 1
        };
        if !(single_short || once) {
            continue;
        }
        let defs = std::mem::take(&mut alts[b]);
        let us: Vec<usize> = users[b].drain().collect();
        let bsym = Symbol::Nt(NtId(b as u32));
        for &a in &us {
            let mut out: Vec<Vec<Symbol>> = Vec::new();
            for r in std::mem::take(&mut alts[a]) {
                // expand every occurrence of b by each of its definitions
                let mut partial: Vec<Vec<Symbol>> = vec![Vec::new()];
                for s in r {
                    if s == bsym {
                        partial = partial
                            .iter()
                            .flat_map(|p| {
                                defs.iter().map(move |d| {
                                    let mut q = p.clone();
                                    q.extend(d.iter().cloned());
                                    q
                                })
                            })
                            .collect();
                    } else {
                        for p in &mut partial {
                            p.push(s.clone());
                        }
                    }
                }
                out.extend(partial);
            }
            let mut seen = HashSet::new();
            out.retain(|r| seen.insert(r.clone()));
            alts[a] = out;
        }
        for d in &defs {
            for s in d {
                if let Symbol::Nt(c) = s {
                    let c = c.index();
                    users[c].remove(&b);
                    users[c].extend(us.iter().copied());
                    if !queued[c] {
                        queued[c] = true;
                        queue.push(c);
                    }
                }
            }
        }
        for a in us {
            if !queued[a] {
                queued[a] = true;
                queue.push(a);
            }
        }
    }
    let rules = alts
        .into_iter()
        .enumerate()
        .flat_map(|(a, rs)| {
            rs.into_iter().map(move |rhs| Rule {
                lhs: NtId(a as u32),
                rhs,
            })
        })
        .collect();
    Ok(compact(g, rules, g.start))
}

/// Drops duplicate productions and merges nonterminals whose sets of
/// alternatives are identical (see the module docs).
pub fn dedupe(g: &Grammar) -> Result<Grammar, GrammarError> {
    validate(g)?;
    let n = g.num_nonterminals();
    let mut rules = dedupe_rules(g.rules.clone());
    let mut start = g.start;
    loop {
        let mut sets: Vec<BTreeSet<Vec<Symbol>>> = vec![BTreeSet::new(); n];
        let mut has_rules = vec![false; n];
        for r in &rules {
            sets[r.lhs.index()].insert(r.rhs.clone());
            has_rules[r.lhs.index()] = true;
        }
        let mut rep: HashMap<&BTreeSet<Vec<Symbol>>, usize> = HashMap::new();
        let mut map: Vec<usize> = (0..n).collect();
        let mut merged = false;
        // the start symbol is its class's representative
        let order = std::iter::once(start.index()).chain((0..n).filter(|&i| i != start.index()));
        for i in order {
            if !has_rules[i] {
                continue;
            }
            match rep.get(&sets[i]) {
                Some(&r) => {
                    map[i] = r;
                    merged = true;
                }
                None => {
                    rep.insert(&sets[i], i);
                }
            }
        }
        if !merged {
            break;
        }
        let sub = |b: NtId| NtId(map[b.index()] as u32);
        rules = dedupe_rules(
            rules
                .into_iter()
                .filter(|r| map[r.lhs.index()] == r.lhs.index())
                .map(|r| Rule {
                    lhs: r.lhs,
                    rhs: r
                        .rhs
                        .into_iter()
                        .map(|s| match s {
                            Symbol::Nt(b) => Symbol::Nt(sub(b)),
                            t => t,
                        })
                        .collect(),
                })
                .collect(),
        );
        start = sub(start);
    }
    Ok(compact(g, rules, start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{all_strings, random_grammar};
    use crate::Recognizer;
    use proptest::prelude::*;

    fn gr(src: &str) -> Grammar {
        Grammar::from_gbnf(src).unwrap()
    }

    #[test]
    fn units() {
        let g = gr("E ::= E \"+\" T | T\nT ::= T \"*\" F | F\nF ::= \"(\" E \")\" | \"x\"");
        assert_eq!(
            eliminate_units(&g, &InlineConfig::default())
                .unwrap()
                .to_string(),
            "E ::= E \"+\" T | T \"*\" F | \"(\" E \")\" | \"x\"\n\
             T ::= T \"*\" F | \"(\" E \")\" | \"x\"\n\
             F ::= \"(\" E \")\" | \"x\"\n"
        );
        // unit cycles collapse
        let g = gr("A ::= B | \"a\"\nB ::= A | \"b\"");
        assert_eq!(
            eliminate_units(&g, &InlineConfig::default())
                .unwrap()
                .to_string(),
            "A ::= \"a\" | \"b\"\nB ::= \"b\" | \"a\"\n"
        );
        // over budget: keep the unit rules
        let cfg = InlineConfig {
            max_unit_rules_per_nt: 1,
            ..InlineConfig::default()
        };
        let g = gr("A ::= B | C\nB ::= \"b\" | \"bb\"\nC ::= \"c\"");
        assert_eq!(eliminate_units(&g, &cfg).unwrap(), g);
    }

    #[test]
    fn inlining() {
        // `pair` has a single short rule: inlined at both uses; `key` too;
        // `val` is then used twice with two alternatives: kept.
        let g = gr("root ::= pair (\",\" pair)*\npair ::= key \":\" val\nkey ::= \"k\"\nval ::= \"1\" | \"2\"");
        assert_eq!(
            inline_nonterminals(&g, &InlineConfig::default())
                .unwrap()
                .to_string(),
            "root ::= \"k\" \":\" val root-star\n\
             val ::= \"1\" | \"2\"\n\
             root-star ::= \"\" | root-star \",\" \"k\" \":\" val\n"
        );
        // used once with two alternatives: inlined only if allowed
        let g = gr("root ::= \"<\" v \">\"\nv ::= \"1\" | \"2\" \"3\"");
        assert_eq!(
            inline_nonterminals(&g, &InlineConfig::default()).unwrap(),
            g
        );
        let cfg = InlineConfig {
            max_alternatives: 2,
            ..InlineConfig::default()
        };
        assert_eq!(
            inline_nonterminals(&g, &cfg).unwrap().to_string(),
            "root ::= \"<\" \"1\" \">\" | \"<\" \"2\" \"3\" \">\"\n"
        );
        // self-recursive and start symbols stay
        let g = gr("root ::= a\na ::= a \"x\" | \"y\"");
        assert_eq!(
            inline_nonterminals(&g, &InlineConfig::default()).unwrap(),
            g
        );
    }

    #[test]
    fn dedupe_merges_identical_nonterminals() {
        let g = gr("root ::= a b | a b\na ::= d \"x\"\nb ::= e \"x\"\nd ::= [0-9]\ne ::= [0-9]");
        assert_eq!(
            dedupe(&g).unwrap().to_string(),
            "root ::= a a\na ::= d \"x\"\nd ::= [0-9]\n"
        );
        let g = gr("root ::= x\nx ::= \"a\"\ny ::= \"a\"\nw ::= y");
        let h = dedupe(&g).unwrap();
        // y merges into x; then w (now `w ::= x`) merges into the start symbol
        assert_eq!(h.to_string(), "root ::= x\nx ::= \"a\"\n");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        #[test]
        fn each_rewrite_keeps_the_language(g in random_grammar(), small in any::<bool>()) {
            let cfg = if small {
                InlineConfig { max_unit_rules_per_nt: 2, max_inline_len: 1, max_alternatives: 2 }
            } else {
                InlineConfig { max_alternatives: 16, ..InlineConfig::default() }
            };
            let r0 = Recognizer::new(&g).unwrap();
            let hs = [
                ("units", eliminate_units(&g, &cfg).unwrap()),
                ("inline", inline_nonterminals(&g, &cfg).unwrap()),
                ("dedupe", dedupe(&g).unwrap()),
            ];
            for (name, h) in &hs {
                let r1 = Recognizer::new(h).unwrap();
                for w in all_strings(6) {
                    prop_assert_eq!(r0.recognizes(&w), r1.recognizes(&w), "{}: {}\n=>\n{}\n{:?}", name, g, h, w);
                }
            }
            // full unit elimination leaves no unit rule
            if !small {
                prop_assert!(hs[0].1.rules.iter().all(|r| unit_target(&r.rhs).is_none()), "{}", hs[0].1);
            }
        }
    }
}
