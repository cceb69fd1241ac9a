//! A deliberately naive reference recognizer, for testing.
//!
//! Textbook Earley recognition (ZapFormat §3.2: predict, scan, complete)
//! over *byte positions*, written for obviousness rather than speed, and
//! sharing no code with the `earley` crate so it can serve as that crate's
//! oracle:
//!
//! * items are `(rule, dot, origin)` in one set per input position, kept in
//!   a `Vec` plus a `HashSet` for de-duplication;
//! * a terminal is scanned by running its [`TerminalDfa`] over the input
//!   from the item's position and adding the advanced item to *every* later
//!   set `j` where the bytes `input[k..j]` are a full match (so regex
//!   terminals may match multi-byte, variable-length, even empty strings);
//! * ε is handled by Aycock & Horspool's fix: predicting a nullable
//!   nonterminal also advances the dot over it;
//! * left recursion needs nothing special in Earley.
//!
//! Rules that mention a non-generating symbol are dropped first (this does
//! not change the language); afterwards every Earley item extends to a full
//! derivation, which makes [`Recognizer::is_viable_prefix`] exact: a byte
//! string is a viable prefix iff the last set is non-empty or some item
//! `A → α • t β` in an earlier set `k` has `input[k..]` as a live prefix of
//! terminal `t`.

use std::collections::{HashMap, HashSet};

use crate::dfa::TerminalDfa;
use crate::error::GrammarError;
use crate::ir::{Grammar, Symbol, Terminal};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Sym {
    Nt(u32),
    T(u32),
}

/// A grammar prepared for naive Earley recognition; reusable across inputs.
#[derive(Clone, Debug)]
pub struct Recognizer {
    lhs: Vec<u32>,
    rhs: Vec<Vec<Sym>>,
    by_lhs: Vec<Vec<u32>>,
    dfas: Vec<TerminalDfa>,
    nullable: Vec<bool>,
    start: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Item {
    rule: u32,
    dot: u32,
    origin: u32,
}

impl Recognizer {
    /// Compiles every terminal and drops rules that use a non-generating
    /// symbol. Errors for rules that mention unknown nonterminal ids and for
    /// regex terminals that do not compile.
    pub fn new(g: &Grammar) -> Result<Recognizer, GrammarError> {
        Self::build(g, false)
    }

    /// [`Recognizer::new`] with each regex terminal's automaton
    /// determinised lazily ([`TerminalDfa::lazy_hir`]): a state is built
    /// when an input first reaches it. For recognising a few short
    /// strings against a grammar whose terminals have large automata (a
    /// long `maxLength`, a `format`), where building every automaton in
    /// full costs more than all the recognitions. An automaton that
    /// reached its [`crate::RegexLimits::dfa_states`] bound answers "no
    /// match" from then on; [`Recognizer::overflowed`] tells.
    pub fn new_lazy(g: &Grammar) -> Result<Recognizer, GrammarError> {
        Self::build(g, true)
    }

    /// True when a lazily built automaton ([`Recognizer::new_lazy`])
    /// refused a state for its bound: answers given since may have left out
    /// matches.
    pub fn overflowed(&self) -> bool {
        self.dfas.iter().any(TerminalDfa::overflowed)
    }

    fn build(g: &Grammar, lazy: bool) -> Result<Recognizer, GrammarError> {
        let n = g.num_nonterminals();
        if g.start.index() >= n {
            return Err(GrammarError::Invalid {
                reason: format!("start symbol id {} out of range", g.start.0),
            });
        }
        let mut term_ids: HashMap<&Terminal, u32> = HashMap::new();
        let mut dfas = Vec::new();
        let mut rules: Vec<(u32, Vec<Sym>)> = Vec::new();
        for r in &g.rules {
            let check = |id: u32| {
                if (id as usize) < n {
                    Ok(id)
                } else {
                    Err(GrammarError::Invalid {
                        reason: format!("rule mentions nonterminal id {id} out of range"),
                    })
                }
            };
            let lhs = check(r.lhs.0)?;
            let mut rhs = Vec::with_capacity(r.rhs.len());
            for s in &r.rhs {
                rhs.push(match s {
                    Symbol::Nt(b) => Sym::Nt(check(b.0)?),
                    Symbol::T(t) => {
                        let id = match term_ids.get(t) {
                            Some(&id) => id,
                            None => {
                                let dfa = match t {
                                    Terminal::Regex(re) if lazy => {
                                        let limits = crate::RegexLimits::default();
                                        match g.regex_hir(re) {
                                            Some(h) => TerminalDfa::lazy_hir(h, re, &limits),
                                            None => TerminalDfa::lazy_regex(re, &limits),
                                        }
                                    }
                                    _ => TerminalDfa::compile(t),
                                };
                                dfas.push(dfa.map_err(|e| e.in_rule(g.name(r.lhs)))?);
                                let id = (dfas.len() - 1) as u32;
                                term_ids.insert(t, id);
                                id
                            }
                        };
                        Sym::T(id)
                    }
                });
            }
            rules.push((lhs, rhs));
        }

        // Generating nonterminals: least fixpoint.
        let t_gen: Vec<bool> = dfas
            .iter()
            .map(|d| d.start() != TerminalDfa::DEAD)
            .collect();
        let generating = derives_all(&rules, n, &t_gen);
        rules.retain(|(_, rhs)| {
            rhs.iter().all(|s| match *s {
                Sym::Nt(b) => generating[b as usize],
                Sym::T(t) => t_gen[t as usize],
            })
        });

        // Nullable nonterminals: least fixpoint (terminals may match ε too).
        let t_null: Vec<bool> = dfas.iter().map(|d| d.is_accepting(d.start())).collect();
        let nullable = derives_all(&rules, n, &t_null);

        let mut by_lhs = vec![Vec::new(); n];
        for (i, (lhs, _)) in rules.iter().enumerate() {
            by_lhs[*lhs as usize].push(i as u32);
        }
        let (lhs, rhs) = rules.into_iter().unzip();
        Ok(Recognizer {
            lhs,
            rhs,
            by_lhs,
            dfas,
            nullable,
            start: g.start.0,
        })
    }

    /// Runs Earley over `input`; returns the item sets (one per position).
    fn sets(&self, input: &[u8]) -> Vec<Vec<Item>> {
        let n = input.len();
        let mut sets: Vec<Vec<Item>> = vec![Vec::new(); n + 1];
        let mut seen: Vec<HashSet<Item>> = vec![HashSet::new(); n + 1];
        // per set: nonterminal → indices of items waiting for it
        let mut waiting: Vec<HashMap<u32, Vec<usize>>> = vec![HashMap::new(); n + 1];

        fn add(
            sets: &mut [Vec<Item>],
            seen: &mut [HashSet<Item>],
            waiting: &mut [HashMap<u32, Vec<usize>>],
            rhs: &[Vec<Sym>],
            k: usize,
            it: Item,
        ) {
            if seen[k].insert(it) {
                if let Some(Sym::Nt(b)) = rhs[it.rule as usize].get(it.dot as usize) {
                    waiting[k].entry(*b).or_default().push(sets[k].len());
                }
                sets[k].push(it);
            }
        }

        for &r in &self.by_lhs[self.start as usize] {
            add(
                &mut sets,
                &mut seen,
                &mut waiting,
                &self.rhs,
                0,
                Item {
                    rule: r,
                    dot: 0,
                    origin: 0,
                },
            );
        }
        for k in 0..=n {
            let mut i = 0;
            while i < sets[k].len() {
                let it = sets[k][i];
                i += 1;
                let adv = Item {
                    dot: it.dot + 1,
                    ..it
                };
                match self.rhs[it.rule as usize].get(it.dot as usize).copied() {
                    None => {
                        // complete
                        let b = self.lhs[it.rule as usize];
                        let o = it.origin as usize;
                        let parents: Vec<Item> = waiting[o]
                            .get(&b)
                            .map(|v| v.iter().map(|&p| sets[o][p]).collect())
                            .unwrap_or_default();
                        for p in parents {
                            add(
                                &mut sets,
                                &mut seen,
                                &mut waiting,
                                &self.rhs,
                                k,
                                Item {
                                    dot: p.dot + 1,
                                    ..p
                                },
                            );
                        }
                    }
                    Some(Sym::Nt(b)) => {
                        // predict (+ Aycock–Horspool)
                        for &r in &self.by_lhs[b as usize] {
                            add(
                                &mut sets,
                                &mut seen,
                                &mut waiting,
                                &self.rhs,
                                k,
                                Item {
                                    rule: r,
                                    dot: 0,
                                    origin: k as u32,
                                },
                            );
                        }
                        if self.nullable[b as usize] {
                            add(&mut sets, &mut seen, &mut waiting, &self.rhs, k, adv);
                        }
                    }
                    Some(Sym::T(t)) => {
                        // scan: every j with input[k..j] a full match
                        let d = &self.dfas[t as usize];
                        let mut s = d.start();
                        if d.is_accepting(s) {
                            add(&mut sets, &mut seen, &mut waiting, &self.rhs, k, adv);
                        }
                        for (j, &byte) in input.iter().enumerate().skip(k) {
                            s = d.next(s, byte);
                            if s == TerminalDfa::DEAD {
                                break;
                            }
                            if d.is_accepting(s) {
                                add(&mut sets, &mut seen, &mut waiting, &self.rhs, j + 1, adv);
                            }
                        }
                    }
                }
            }
        }
        sets
    }

    /// Total number of Earley items over all sets when recognizing `input`
    /// (a grammar-independent measure of parsing work, used to compare a
    /// grammar before and after the transforms).
    pub fn count_items(&self, input: &[u8]) -> usize {
        self.sets(input).iter().map(Vec::len).sum()
    }

    /// Whether the grammar derives exactly `input`.
    pub fn recognizes(&self, input: &[u8]) -> bool {
        let sets = self.sets(input);
        sets[input.len()].iter().any(|it| {
            it.origin == 0
                && self.lhs[it.rule as usize] == self.start
                && it.dot as usize == self.rhs[it.rule as usize].len()
        })
    }

    /// Whether some continuation of `prefix` is in the language.
    pub fn is_viable_prefix(&self, prefix: &[u8]) -> bool {
        let sets = self.sets(prefix);
        let n = prefix.len();
        if !sets[n].is_empty() {
            return true;
        }
        sets.iter().enumerate().take(n).any(|(k, set)| {
            set.iter()
                .any(|it| match self.rhs[it.rule as usize].get(it.dot as usize) {
                    Some(Sym::T(t)) => {
                        let d = &self.dfas[*t as usize];
                        d.run(d.start(), &prefix[k..]) != TerminalDfa::DEAD
                    }
                    _ => false,
                })
        })
    }

    /// Number of rules kept (rules with non-generating symbols are dropped).
    pub fn num_rules(&self) -> usize {
        self.lhs.len()
    }
}

/// Whether `g` derives exactly `input` (compiles `g` each call; use
/// [`Recognizer`] to check many inputs).
pub fn recognizes(g: &Grammar, input: &[u8]) -> Result<bool, GrammarError> {
    Ok(Recognizer::new(g)?.recognizes(input))
}

/// Whether some continuation of `prefix` is in the language of `g` (the
/// brute-force mask reference: a token is allowed after `p` iff
/// `p + token` is a viable prefix).
pub fn is_viable_prefix(g: &Grammar, prefix: &[u8]) -> Result<bool, GrammarError> {
    Ok(Recognizer::new(g)?.is_viable_prefix(prefix))
}

/// The least fixpoint "nonterminal `A` has a rule whose every symbol
/// qualifies", where terminal `t` qualifies when `term[t]`: with
/// `term` = "matches something" it is the generating set, with `term` =
/// "matches ε" the nullable set.
fn derives_all(rules: &[(u32, Vec<Sym>)], n: usize, term: &[bool]) -> Vec<bool> {
    let mut ok = vec![false; n];
    loop {
        let mut changed = false;
        for (lhs, rhs) in rules {
            if !ok[*lhs as usize]
                && rhs.iter().all(|s| match *s {
                    Sym::Nt(b) => ok[b as usize],
                    Sym::T(t) => term[t as usize],
                })
            {
                ok[*lhs as usize] = true;
                changed = true;
            }
        }
        if !changed {
            return ok;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{all_strings, brute_force_language, random_grammar};
    use proptest::prelude::*;

    fn g(src: &str) -> Grammar {
        Grammar::from_gbnf(src).unwrap()
    }

    #[test]
    fn epsilon_and_left_recursion() {
        let r = Recognizer::new(&g("root ::= root \"a\" | e\ne ::= \"\" | e e")).unwrap();
        for k in 0..6 {
            assert!(r.recognizes("a".repeat(k).as_bytes()));
        }
        assert!(!r.recognizes(b"b"));
        // root → •root a, •e, and ε-advanced items: a fixed, countable set
        assert!(r.count_items(b"") >= 4);
        // hidden left recursion through a nullable symbol
        let r = Recognizer::new(&g("root ::= n root \"b\" | \"c\"\nn ::= \"\" | \"a\"")).unwrap();
        assert!(
            r.recognizes(b"cbb")
                && r.recognizes(b"acb")
                && r.recognizes(b"aacbb")
                && !r.recognizes(b"aacb")
        );
    }

    #[test]
    fn lazy_multi_byte_terminals() {
        let gr = g("root ::= /[a-z]*/ \"=\" /[0-9]{0,300}|x*/ [é-ê]");
        let r = Recognizer::new_lazy(&gr).unwrap();
        assert!(r.recognizes("ab=12é".as_bytes()));
        assert!(r.recognizes(format!("={}ê", "7".repeat(300)).as_bytes()));
        assert!(!r.recognizes(format!("={}ê", "7".repeat(301)).as_bytes()));
        assert!(!r.recognizes("ab=1xé".as_bytes()));
        assert!(!r.overflowed());
    }

    #[test]
    fn multi_byte_terminals() {
        let r = Recognizer::new(&g("root ::= /[a-z]*/ \"=\" /[0-9]+|x*/ [é-ê]")).unwrap();
        assert!(r.recognizes("ab=12é".as_bytes()));
        assert!(r.recognizes("=ê".as_bytes()));
        assert!(r.recognizes("=xxê".as_bytes()));
        assert!(!r.recognizes("ab=1xé".as_bytes()));
        assert!(r.is_viable_prefix(b"ab=1"));
        assert!(r.is_viable_prefix(&"ab=1é".as_bytes()[..5]));
        assert!(!r.is_viable_prefix(b"ab=1x"));
        assert!(!r.is_viable_prefix(b"A"));
        assert!(r.is_viable_prefix(b""));
    }

    #[test]
    fn non_generating_rules_do_not_make_prefixes_viable() {
        let r = Recognizer::new(&g("root ::= \"a\" x | \"a\" \"b\"\nx ::= x \"c\"")).unwrap();
        assert!(r.is_viable_prefix(b"a"));
        assert!(!r.is_viable_prefix(b"ac"));
        let empty = Recognizer::new(&g("root ::= root \"a\"")).unwrap();
        assert!(!empty.is_viable_prefix(b"") && !empty.recognizes(b""));
    }

    #[test]
    fn invalid_grammar_is_an_error() {
        let mut gr = Grammar::new();
        let s = gr.add_nonterminal("s");
        gr.add_rule(s, vec![Symbol::Nt(crate::ir::NtId(7))]);
        assert!(matches!(
            recognizes(&gr, b""),
            Err(GrammarError::Invalid { .. })
        ));
        gr.rules.clear();
        gr.add_rule(s, vec![Symbol::T(Terminal::Regex("(".into()))]);
        assert!(matches!(
            recognizes(&gr, b""),
            Err(GrammarError::Regex { .. })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        /// The recognizer agrees with bottom-up enumeration of derivations.
        #[test]
        fn agrees_with_brute_force(gr in random_grammar()) {
            let lang = brute_force_language(&gr, 5);
            let r = Recognizer::new(&gr).unwrap();
            for s in all_strings(5) {
                prop_assert_eq!(r.recognizes(&s), lang.contains(&s), "{}\ninput {:?}", gr, String::from_utf8_lossy(&s));
            }
        }

        /// The lazily built recognizer agrees with brute force too.
        #[test]
        fn lazy_agrees_with_brute_force(gr in random_grammar()) {
            let lang = brute_force_language(&gr, 5);
            let r = Recognizer::new_lazy(&gr).unwrap();
            for s in all_strings(5) {
                prop_assert_eq!(r.recognizes(&s), lang.contains(&s), "{}\ninput {:?}", gr, String::from_utf8_lossy(&s));
            }
            prop_assert!(!r.overflowed());
        }

        /// Viable prefixes: every prefix of a member is viable (checked
        /// against enumerated members), and every viable prefix is either a
        /// member or has a viable one-byte extension (so following viable
        /// bytes can never get stuck — the alphabet is {a,b,c}).
        #[test]
        fn viable_prefix_agrees_with_brute_force(gr in random_grammar()) {
            let lang = brute_force_language(&gr, 6);
            let r = Recognizer::new(&gr).unwrap();
            for p in all_strings(4) {
                let viable = r.is_viable_prefix(&p);
                if lang.iter().any(|w| w.starts_with(&p)) {
                    prop_assert!(viable, "{}\nprefix {:?}", gr, String::from_utf8_lossy(&p));
                }
                if viable {
                    let ok = r.recognizes(&p) || b"abc".iter().any(|&c| {
                        let mut q = p.clone();
                        q.push(c);
                        r.is_viable_prefix(&q)
                    });
                    prop_assert!(ok, "{}\nviable prefix {:?} is stuck", gr, String::from_utf8_lossy(&p));
                }
            }
        }
    }
}
