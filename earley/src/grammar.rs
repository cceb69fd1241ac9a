//! The grammar as the Earley engine sees it: rules flattened into *dotted
//! positions* (an LR(0) item `A → α • β` is one `u32`, its postdot symbol
//! one [`Sym`]), terminals as shared
//! DFAs, nullable flags for the Aycock–Horspool prediction fix, and
//! unproductive rules removed (so every Earley item in a set can be
//! completed — the premise of the context-independent mask cache).

use std::sync::Arc;

use zapspec_grammar::{Grammar, Symbol};

use crate::ci_cache::TermEntry;
use crate::error::EarleyError;
use crate::terminal::DEAD;

/// The symbol after the dot of a dotted position: a nonterminal, a
/// terminal, or the end of the rule. One `u32` (the hot loops of the
/// chart read one per item): a nonterminal id as is, a terminal index with
/// the top bit set, the end as `u32::MAX`; [`Sym::kind`] and the `as_*`
/// helpers are the only readers of that encoding.
#[repr(transparent)]
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Sym(u32);

/// What a [`Sym`] is.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum SymKind {
    /// A nonterminal id.
    Nt(u32),
    /// A terminal index (into `Rules::terms`).
    Term(u32),
    /// The end of the rule (the item is complete).
    End,
}

impl Sym {
    /// Flag bit of a terminal (the rest is the terminal index).
    const TERM: u32 = 1 << 31;
    /// The end of a rule.
    pub const END: Sym = Sym(u32::MAX);
    /// Nonterminal ids and terminal indices must be below this (so that
    /// no terminal is `END`).
    pub const MAX_ID: u32 = Self::TERM - 1;

    /// Nonterminal `id`.
    #[inline]
    pub fn nt(id: u32) -> Sym {
        debug_assert!(id < Self::MAX_ID);
        Sym(id)
    }

    /// Terminal `t`.
    #[inline]
    pub fn term(t: u32) -> Sym {
        debug_assert!(t < Self::MAX_ID);
        Sym(Self::TERM | t)
    }

    /// Which kind of symbol this is, with its id.
    #[inline]
    pub fn kind(self) -> SymKind {
        if self.0 == u32::MAX {
            SymKind::End
        } else if self.0 & Self::TERM != 0 {
            SymKind::Term(self.0 & !Self::TERM)
        } else {
            SymKind::Nt(self.0)
        }
    }

    /// The terminal index, when this is a terminal.
    #[inline]
    pub fn as_term(self) -> Option<u32> {
        if self.0 != u32::MAX && self.0 & Self::TERM != 0 {
            Some(self.0 & !Self::TERM)
        } else {
            None
        }
    }

    /// True for the end of a rule.
    #[inline]
    pub fn is_end(self) -> bool {
        self == Self::END
    }
}

/// Rules flattened into dotted positions.
#[derive(Debug)]
pub(crate) struct Rules {
    /// Distinct terminals, shared with other grammars over the same vocabulary.
    pub terms: Vec<Arc<TermEntry>>,
    /// Symbol after the dot of each position ([`Self::sym`]).
    sym: Vec<Sym>,
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
        let mut term_ids: rustc_hash::FxHashMap<&zapspec_grammar::Terminal, u32> =
            Default::default();
        let mut rules: Vec<(u32, Vec<Sym>)> = Vec::with_capacity(g.rules.len() + 1);
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
                        rhs.push(Sym::nt(n.0))
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
                        rhs.push(Sym::term(id));
                    }
                }
            }
            rules.push((r.lhs.0, rhs));
        }
        if terms.len() > (Sym::MAX_ID as usize) || n_nt + 1 > Sym::MAX_ID as usize {
            return Err(EarleyError::Invalid {
                reason: "grammar too large".into(),
            });
        }
        let start_nt = n_nt as u32;
        rules.push((start_nt, vec![Sym::nt(g.start.0)]));
        let n_nt = n_nt + 1;

        // Productive symbols; drop rules that use an unproductive one.
        let term_ok = |t: u32| terms[t as usize].start() != DEAD;
        let mut productive = vec![false; n_nt];
        let mut changed = true;
        while changed {
            changed = false;
            for (lhs, rhs) in &rules {
                if !productive[*lhs as usize]
                    && rhs.iter().all(|&s| match s.kind() {
                        SymKind::Term(t) => term_ok(t),
                        SymKind::Nt(n) => productive[n as usize],
                        SymKind::End => true,
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
            rhs.iter().all(|&s| match s.kind() {
                SymKind::Term(t) => term_ok(t),
                SymKind::Nt(n) => productive[n as usize],
                SymKind::End => true,
            })
        });
        // Nullable.
        let term_null = |t: u32| terms[t as usize].is_nullable();
        let mut nullable = vec![false; n_nt];
        let mut changed = true;
        while changed {
            changed = false;
            for (lhs, rhs) in &rules {
                if !nullable[*lhs as usize]
                    && rhs.iter().all(|&s| match s.kind() {
                        SymKind::Term(t) => term_null(t),
                        SymKind::Nt(n) => nullable[n as usize],
                        SymKind::End => true,
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
                init.push(match s.as_term() {
                    Some(t) => terms[t as usize].start(),
                    None => 0,
                });
            }
            sym.push(Sym::END);
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

    /// The symbol after the dot of position `pos`.
    #[inline]
    pub fn sym(&self, pos: u32) -> Sym {
        self.sym[pos as usize]
    }

    /// Number of dotted positions.
    pub fn num_positions(&self) -> usize {
        self.sym.len()
    }
}
