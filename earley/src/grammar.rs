//! The grammar as the Earley engine sees it: rules flattened into *dotted
//! positions* (an LR(0) item `A → α • β` is one `u32`), terminals as shared
//! DFAs, nullable flags for the Aycock–Horspool prediction fix, and
//! unproductive rules removed (so every Earley item in a set can be
//! completed — the premise of the context-independent mask cache).

use std::sync::Arc;

use zapspec_grammar::{Grammar, Symbol};

use crate::ci_cache::TermEntry;
use crate::error::EarleyError;
use crate::terminal::DEAD;

/// `sym[pos]` for a dot at the end of its rule.
pub(crate) const END: u32 = u32::MAX;
/// Flag bit of `sym[pos]` for a terminal (the rest is the terminal index).
pub(crate) const TERM: u32 = 1 << 31;

/// Rules flattened into dotted positions.
#[derive(Debug)]
pub(crate) struct Rules {
    /// Distinct terminals, shared with other grammars over the same vocabulary.
    pub terms: Vec<Arc<TermEntry>>,
    /// Symbol after the dot: a nonterminal id, `TERM | t`, or `END`.
    pub sym: Vec<u32>,
    /// Left-hand side of the rule of each position.
    pub lhs: Vec<u32>,
    /// Initial DFA state of an item at this position (the postdot terminal's
    /// start state; 0 otherwise).
    pub init: Vec<u32>,
    /// First position of each rule of each nonterminal (CSR by nonterminal).
    pub nt_rules_off: Vec<u32>,
    pub nt_rules: Vec<u32>,
    pub nullable: Vec<bool>,
    /// The augmented start nonterminal `S'` and the position `S' → S •`.
    pub start_nt: u32,
    pub accept_pos: u32,
    /// Most items of one Earley set (`EngineConfig::max_set_items`; no
    /// bound until the compiled grammar sets it).
    pub max_set_items: usize,
}

impl Rules {
    /// Flattens `g` (plus `S' → S`), resolving terminals with `term`.
    pub fn new(
        g: &Grammar,
        mut term: impl FnMut(&zapspec_grammar::Terminal) -> Result<Arc<TermEntry>, EarleyError>,
    ) -> Result<Self, EarleyError> {
        let n_nt = g.num_nonterminals();
        if g.start.index() >= n_nt {
            return Err(EarleyError::Invalid {
                reason: format!("start symbol {} out of range", g.start.0),
            });
        }
        // Terminals.
        let mut terms: Vec<Arc<TermEntry>> = Vec::new();
        let mut term_ids: std::collections::HashMap<&zapspec_grammar::Terminal, u32> =
            Default::default();
        let mut rules: Vec<(u32, Vec<u32>)> = Vec::with_capacity(g.rules.len() + 1);
        for r in &g.rules {
            if r.lhs.index() >= n_nt {
                return Err(EarleyError::Invalid {
                    reason: format!("rule lhs {} out of range", r.lhs.0),
                });
            }
            let mut rhs = Vec::with_capacity(r.rhs.len());
            for s in &r.rhs {
                match s {
                    Symbol::Nt(n) => {
                        if n.index() >= n_nt {
                            return Err(EarleyError::Invalid {
                                reason: format!("nonterminal {} out of range", n.0),
                            });
                        }
                        rhs.push(n.0)
                    }
                    Symbol::T(t) => {
                        let id = match term_ids.get(t) {
                            Some(&id) => id,
                            None => {
                                let id = terms.len() as u32;
                                terms.push(term(t).map_err(|e| e.in_rule(g.name(r.lhs)))?);
                                term_ids.insert(t, id);
                                id
                            }
                        };
                        rhs.push(TERM | id);
                    }
                }
            }
            rules.push((r.lhs.0, rhs));
        }
        if terms.len() >= (TERM as usize) || n_nt + 1 >= TERM as usize {
            return Err(EarleyError::Invalid {
                reason: "grammar too large".into(),
            });
        }
        let start_nt = n_nt as u32;
        rules.push((start_nt, vec![g.start.0]));
        let n_nt = n_nt + 1;

        // Productive symbols; drop rules that use an unproductive one.
        let term_ok = |t: u32| terms[(t & !TERM) as usize].start() != DEAD;
        let mut productive = vec![false; n_nt];
        let mut changed = true;
        while changed {
            changed = false;
            for (lhs, rhs) in &rules {
                if !productive[*lhs as usize]
                    && rhs.iter().all(|&s| {
                        if s & TERM != 0 {
                            term_ok(s)
                        } else {
                            productive[s as usize]
                        }
                    })
                {
                    productive[*lhs as usize] = true;
                    changed = true;
                }
            }
        }
        if !productive[start_nt as usize] {
            return Err(EarleyError::EmptyLanguage {
                start: g.name(g.start).to_string(),
            });
        }
        rules.retain(|(_, rhs)| {
            rhs.iter().all(|&s| {
                if s & TERM != 0 {
                    term_ok(s)
                } else {
                    productive[s as usize]
                }
            })
        });
        // Nullable.
        let term_null = |t: u32| terms[(t & !TERM) as usize].is_nullable();
        let mut nullable = vec![false; n_nt];
        let mut changed = true;
        while changed {
            changed = false;
            for (lhs, rhs) in &rules {
                if !nullable[*lhs as usize]
                    && rhs.iter().all(|&s| {
                        if s & TERM != 0 {
                            term_null(s)
                        } else {
                            nullable[s as usize]
                        }
                    })
                {
                    nullable[*lhs as usize] = true;
                    changed = true;
                }
            }
        }
        // Flatten, grouped by lhs.
        let mut order: Vec<usize> = (0..rules.len()).collect();
        order.sort_by_key(|&i| rules[i].0);
        let mut sym = Vec::new();
        let mut lhs = Vec::new();
        let mut init = Vec::new();
        let mut nt_rules_off = vec![0u32; n_nt + 1];
        let mut nt_rules = Vec::with_capacity(rules.len());
        let mut accept_pos = 0;
        for &i in &order {
            let (l, rhs) = &rules[i];
            let base = sym.len() as u32;
            nt_rules.push(base);
            nt_rules_off[*l as usize + 1] += 1;
            for &s in rhs {
                sym.push(s);
                lhs.push(*l);
                init.push(if s & TERM != 0 {
                    terms[(s & !TERM) as usize].start()
                } else {
                    0
                });
            }
            sym.push(END);
            lhs.push(*l);
            init.push(0);
            if *l == start_nt {
                accept_pos = base + 1;
            }
        }
        for i in 0..n_nt {
            nt_rules_off[i + 1] += nt_rules_off[i];
        }
        if sym.len() >= u32::MAX as usize / 2 {
            return Err(EarleyError::Invalid {
                reason: "grammar too large".into(),
            });
        }
        Ok(Rules {
            terms,
            sym,
            lhs,
            init,
            nt_rules_off,
            nt_rules,
            nullable,
            start_nt,
            accept_pos,
            max_set_items: usize::MAX,
        })
    }

    /// First positions of the rules of `nt`.
    #[inline]
    pub fn rules_of(&self, nt: u32) -> &[u32] {
        &self.nt_rules
            [self.nt_rules_off[nt as usize] as usize..self.nt_rules_off[nt as usize + 1] as usize]
    }

    /// Number of dotted positions.
    pub fn num_positions(&self) -> usize {
        self.sym.len()
    }
}
