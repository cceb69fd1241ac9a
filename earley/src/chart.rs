//! Earley items and sets over bytes (ZapFormat §3.2, §4.2.1).
//!
//! An [`Item`] is `(A → α • β, i, j)`: the dotted position `pos` (which
//! determines the rule and the dot), the origin `i` (the absolute index of
//! the Earley set where the rule started) and, when the postdot symbol is a
//! terminal, the DFA state `st` of that terminal in progress. `j`, the end of
//! the span, is the set that holds the item. Sets are indexed by byte offset
//! (absolute position): set `j` holds the items after `j` bytes.
//!
//! The committed chart ([`Chart`]) is a list of `(position, Arc<[Item]>)`:
//! with pruning only the sets still referenced survive; unchanged sets are
//! shared between successive states, so a fork or a rollback snapshot costs
//! one pointer per retained set. [`Work`] stacks speculative sets on top of
//! a chart with cheap push/pop, which is what the token-trie walk needs.
//!
//! The three operations of §3.2 are in [`Work::close`]: SCAN happens in
//! [`Work::push_byte`] (each item whose postdot terminal's DFA survives the
//! byte moves to the next set with its new DFA state); a terminal whose DFA
//! state is accepting is *completed* in the same set (the dot moves past it);
//! COMPLETE looks up the items waiting in the origin set; PREDICT adds the
//! rules of a postdot nonterminal, and, following Aycock & Horspool (2002),
//! moves the dot over a nullable nonterminal at once, which makes nullable
//! rules correct without re-running completion.

use std::sync::Arc;

use rustc_hash::FxBuildHasher;

use crate::grammar::{Rules, Sym, SymKind};
use crate::terminal::DEAD;

/// An extended Earley item `(A → α • β, origin, ·)` with the DFA state of a
/// postdot terminal in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Item {
    pub pos: u32,
    pub st: u32,
    pub origin: u32,
}

/// A committed chart: the retained Earley sets, oldest first, the last one
/// being the current position.
#[derive(Clone, Debug)]
pub(crate) struct Chart {
    pub sets: Vec<(u32, Arc<[Item]>)>,
    /// The start symbol has been completed over the whole input.
    pub accepting: bool,
}

impl Chart {
    /// Position (byte offset) of the last set.
    pub fn last_pos(&self) -> u32 {
        self.sets.last().map(|s| s.0).unwrap_or(0)
    }

    pub fn last(&self) -> &[Item] {
        self.sets.last().map(|s| &*s.1).unwrap_or(&[])
    }

    pub fn num_items(&self) -> usize {
        self.sets.iter().map(|s| s.1.len()).sum()
    }

    /// Canonical encoding of the chart: sets in order, items sorted, origins
    /// replaced by the rank of their set. Two charts with equal keys accept
    /// exactly the same continuations (the pruned-state cache key, §5.2).
    pub fn key(&self, out: &mut Vec<u32>) {
        out.clear();
        for (_, items) in &self.sets {
            out.push(items.len() as u32);
            for it in items.iter() {
                let rank = self
                    .sets
                    .binary_search_by_key(&it.origin, |s| s.0)
                    .unwrap_or(usize::MAX) as u32;
                out.extend_from_slice(&[it.pos, it.st, rank]);
            }
        }
    }
}

/// Reusable dedup for the set under construction: linear scan while small,
/// a hash set beyond.
#[derive(Default)]
struct Dedup {
    set: std::collections::HashSet<Item, FxBuildHasher>,
    active: bool,
}

const LINEAR_DEDUP: usize = 24;

/// Speculative Earley sets on top of a committed chart (push a byte, pop).
pub(crate) struct Work<'a> {
    pub g: &'a Rules,
    base: &'a [(u32, Arc<[Item]>)],
    base_last: u32,
    /// Items of the speculative sets, concatenated.
    pub items: Vec<Item>,
    /// Start offset of each speculative set in `items`; speculative set `k`
    /// has position `base_last + 1 + k`.
    pub starts: Vec<u32>,
    dedup: Dedup,
    /// Counts: items created (for memory / work statistics).
    pub created: u64,
    /// The set under construction reached `Rules::max_set_items`.
    hit: bool,
    /// Largest set pushed on this work (items, after closure).
    pub largest: usize,
    /// Some set pushed on this work reached the bound (it was dropped, as
    /// if the byte were not viable): the size it reached, for the caller's
    /// `LimitExceeded` error.
    pub overflow: Option<usize>,
}

impl<'a> Work<'a> {
    pub fn new(g: &'a Rules, chart: &'a Chart) -> Self {
        Work {
            g,
            base: &chart.sets,
            base_last: chart.last_pos(),
            items: Vec::with_capacity(256),
            starts: Vec::with_capacity(64),
            dedup: Dedup::default(),
            created: 0,
            hit: false,
            largest: 0,
            overflow: None,
        }
    }

    /// A work with no base, whose first pushed set is set 0 (the initial
    /// chart's): `base_last` is one before 0, wrapping, so that
    /// [`Self::top_pos`] is 0 and every origin of that set is the set
    /// itself.
    fn first(g: &'a Rules, empty: &'a Chart) -> Self {
        debug_assert!(empty.sets.is_empty());
        let mut w = Work::new(g, empty);
        w.base_last = u32::MAX;
        w
    }

    /// After closing the set that starts at `start`: when it reached the
    /// item bound, drops it, records the overflow and returns false.
    #[inline]
    fn check_bound(&mut self, start: usize) -> bool {
        self.largest = self.largest.max(self.items.len() - start);
        if !self.hit {
            return true;
        }
        self.hit = false;
        self.overflow = Some(self.items.len() - start);
        self.items.truncate(start);
        self.starts.pop();
        false
    }

    /// Drops the last speculative set.
    #[inline]
    pub fn pop(&mut self) {
        if let Some(s) = self.starts.pop() {
            self.items.truncate(s as usize);
        }
    }

    /// Position of the top set (wrapping: see [`Self::first`]).
    #[inline]
    fn top_pos(&self) -> u32 {
        self.base_last.wrapping_add(self.starts.len() as u32)
    }

    /// Range of the top speculative set, or None when the top is the base.
    #[inline]
    fn top_range(&self) -> Option<(usize, usize)> {
        self.starts.last().map(|&s| (s as usize, self.items.len()))
    }

    /// Items of the set at absolute position `p` that are not speculative.
    #[inline]
    fn base_set(&self, p: u32) -> &'a [Item] {
        let base = self.base;
        if let Some((q, items)) = base.get(p as usize) {
            if *q == p {
                return items;
            }
        }
        match base.binary_search_by_key(&p, |s| s.0) {
            Ok(i) => &base[i].1,
            Err(_) => &[],
        }
    }

    /// Items of the top set (copied out lazily by index).
    pub fn top_items(&self) -> &[Item] {
        match self.top_range() {
            Some((a, b)) => &self.items[a..b],
            None => self.base.last().map(|s| &*s.1).unwrap_or(&[]),
        }
    }

    #[inline]
    fn add(&mut self, it: Item) {
        let start = *self.starts.last().unwrap_or(&0) as usize;
        let cur = &self.items[start..];
        if !self.dedup.active {
            if cur.contains(&it) {
                return;
            }
            if cur.len() >= LINEAR_DEDUP {
                self.dedup.active = true;
                self.dedup.set.clear();
                self.dedup.set.extend(cur.iter().copied());
                self.dedup.set.insert(it);
            }
        } else if !self.dedup.set.insert(it) {
            return;
        }
        if self.items.len() - start >= self.g.max_set_items {
            // The set is dropped by `check_bound` once closed.
            self.hit = true;
            return;
        }
        self.items.push(it);
        self.created += 1;
    }

    #[inline]
    fn advanced(&self, it: Item) -> Item {
        let p = it.pos + 1;
        Item {
            pos: p,
            st: self.g.init[p as usize],
            origin: it.origin,
        }
    }

    /// SCAN of one item by byte `b`: an item before a terminal moves its
    /// DFA state; a terminal that is finished (accepting, no way on) is
    /// replaced by its completion.
    #[inline]
    fn scan_item(&mut self, x: Item, b: u8) {
        let g = self.g;
        if let Some(t) = g.sym(x.pos).as_term() {
            let dfa = &g.terms[t as usize].dfa();
            let n = dfa.next(x.st, b);
            if n != DEAD {
                if dfa.can_continue(n) {
                    self.add(Item {
                        pos: x.pos,
                        st: n,
                        origin: x.origin,
                    });
                } else {
                    let a = self.advanced(x);
                    self.add(a);
                }
            }
        }
    }

    /// SCAN: pushes the set after byte `b`. Returns false (and pushes
    /// nothing) when no item survives.
    pub fn push_byte(&mut self, b: u8) -> bool {
        let start = self.items.len();
        self.starts.push(start as u32);
        self.dedup.active = false;
        match self.top_range_below() {
            Some((a, e)) => {
                for i in a..e {
                    let x = self.items[i];
                    self.scan_item(x, b);
                }
            }
            None => {
                let last: &'a [Item] = self.base.last().map(|s| &*s.1).unwrap_or(&[]);
                for &x in last {
                    self.scan_item(x, b);
                }
            }
        }
        if self.items.len() == start {
            self.starts.pop();
            return false;
        }
        self.close(start);
        self.check_bound(start)
    }

    /// Range of the set just below the top (the one being scanned from).
    fn top_range_below(&self) -> Option<(usize, usize)> {
        let k = self.starts.len();
        if k >= 2 {
            Some((self.starts[k - 2] as usize, self.starts[k - 1] as usize))
        } else {
            None
        }
    }

    /// Pushes a new set seeded with `seed` (already-advanced items) and
    /// closes it. Returns false when the set is empty.
    pub fn push_seeded(&mut self, seed: impl IntoIterator<Item = Item>) -> bool {
        let start = self.items.len();
        self.starts.push(start as u32);
        self.dedup.active = false;
        for it in seed {
            self.add(it);
        }
        if self.items.len() == start {
            self.starts.pop();
            return false;
        }
        self.close(start);
        self.check_bound(start)
    }

    /// COMPLETE / PREDICT closure of the set starting at `start` (the top).
    /// The very first set (origin 0, no base: [`initial_chart`]) is closed
    /// here too, every origin then being the set itself.
    fn close(&mut self, start: usize) {
        let g = self.g;
        let here = self.top_pos();
        let mut i = start;
        while i < self.items.len() {
            let x = self.items[i];
            i += 1;
            match g.sym(x.pos).kind() {
                SymKind::End => {
                    let lhs = Sym::nt(g.lhs[x.pos as usize]);
                    if x.origin == here {
                        let mut j = start;
                        while j < self.items.len() {
                            let y = self.items[j];
                            j += 1;
                            if g.sym(y.pos) == lhs {
                                let a = self.advanced(y);
                                self.add(a);
                            }
                        }
                    } else if x.origin > self.base_last {
                        let k = (x.origin - self.base_last - 1) as usize;
                        let (a, e) = (self.starts[k] as usize, self.starts[k + 1] as usize);
                        for j in a..e {
                            let y = self.items[j];
                            if g.sym(y.pos) == lhs {
                                let a = self.advanced(y);
                                self.add(a);
                            }
                        }
                    } else {
                        let set = self.base_set(x.origin);
                        for &y in set {
                            if g.sym(y.pos) == lhs {
                                let a = self.advanced(y);
                                self.add(a);
                            }
                        }
                    }
                }
                SymKind::Term(t) => {
                    if g.terms[t as usize].is_accepting(x.st) {
                        let a = self.advanced(x);
                        self.add(a);
                    }
                }
                SymKind::Nt(n) => {
                    for &p in g.rules_of(n) {
                        self.add(Item {
                            pos: p,
                            st: g.init[p as usize],
                            origin: here,
                        });
                    }
                    if g.nullable[n as usize] {
                        let a = self.advanced(x);
                        self.add(a);
                    }
                }
            }
        }
    }

    /// True when the top set contains `S' → S •` from position 0.
    pub fn top_accepting(&self, first_pos: u32) -> bool {
        let acc = Item {
            pos: self.g.accept_pos,
            st: 0,
            origin: first_pos,
        };
        self.top_items().contains(&acc)
    }
}

/// The initial chart: set 0 with `S' → • S` closed; `Err(items)` when it
/// reaches `Rules::max_set_items`.
pub(crate) fn initial_chart(g: &Rules) -> Result<Chart, usize> {
    let empty = Chart {
        sets: Vec::new(),
        accepting: false,
    };
    let mut w = Work::first(g, &empty);
    let seed = g.rules_of(g.start_nt).iter().map(|&p| Item {
        pos: p,
        st: g.init[p as usize],
        origin: 0,
    });
    w.push_seeded(seed);
    if let Some(n) = w.overflow {
        return Err(n);
    }
    let items = w.items;
    let accepting = items.contains(&Item {
        pos: g.accept_pos,
        st: 0,
        origin: 0,
    });
    Ok(Chart {
        sets: vec![(0, items.into())],
        accepting,
    })
}
