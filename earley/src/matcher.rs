//! [`EarleyMatcher`]: one parser state implementing
//! [`zapspec_core::Constraint`] — token masks, advance, rollback, fork.
//!
//! The state is a stack of committed charts, one per consumed token, that
//! share their Earley sets through `Arc`: rollback pops, fork clones a
//! vector of pointers.

use std::hash::Hasher;
use std::sync::Arc;

use rustc_hash::FxHasher;
use zapspec_core::{Constraint, LookAhead, RejectReason, TokenId, TokenSet, Vocabulary};
use zapspec_grammar::Limit;

use crate::chart::{Chart, Item, Work};
use crate::engine::{CompiledGrammar, TerminalTrouble};
use crate::error::EarleyError;
use crate::grammar::Sym;
use crate::prune;
use zapspec_toktrie::Walker;

/// Memory accounting of a matcher (ZapFormat Table 4): the live chart now
/// and its peak over the matcher's life. Bytes count item storage
/// (12 bytes an item) plus set headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemStats {
    /// Items of the current (pruned) chart.
    pub live_items: usize,
    /// Earley sets of the current chart.
    pub live_sets: usize,
    /// Bytes of the current chart (items and set headers).
    pub live_bytes: usize,
    /// Largest `live_items` seen.
    pub peak_items: usize,
    /// Largest `live_sets` seen.
    pub peak_sets: usize,
    /// Largest `live_bytes` seen.
    pub peak_bytes: usize,
    /// Items created by the closure so far (a work counter, masks excluded).
    pub items_created: u64,
}

const SET_HEADER_BYTES: usize = 8 + 16 + 16; // (pos, Arc<[Item]>) + Arc header

impl MemStats {
    fn observe(&mut self, c: &Chart) {
        self.live_items = c.num_items();
        self.live_sets = c.sets.len();
        self.live_bytes =
            self.live_items * std::mem::size_of::<Item>() + self.live_sets * SET_HEADER_BYTES;
        self.peak_items = self.peak_items.max(self.live_items);
        self.peak_sets = self.peak_sets.max(self.live_sets);
        self.peak_bytes = self.peak_bytes.max(self.live_bytes);
    }
}

/// A matcher of a [`CompiledGrammar`] over its vocabulary.
#[derive(Clone)]
pub struct EarleyMatcher {
    g: Arc<CompiledGrammar>,
    history: Vec<Arc<Chart>>,
    finished: bool,
    mem: MemStats,
    key: Vec<u32>,
    scratch: prune::Scratch,
    /// The last `EngineConfig::max_set_items` overflow of an advance or a
    /// mask: (items reached, byte offset of the set, in a mask?).
    limit: Option<(usize, u32, bool)>,
    /// A terminal's automaton left the last advance or mask possibly
    /// incomplete (a lazy DFA refused a state for its bound, or a deferred
    /// build failed): (in a mask?, what happened).
    dfa_limit: Option<(bool, TerminalTrouble)>,
}

impl std::fmt::Debug for EarleyMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EarleyMatcher")
            .field("tokens", &self.num_tokens())
            .field("accepting", &self.is_accepting())
            .field("mem", &self.mem)
            .finish()
    }
}

impl Walker for Work<'_> {
    #[inline]
    fn push(&mut self, b: u8) -> bool {
        self.push_byte(b)
    }
    #[inline]
    fn pop(&mut self) {
        Work::pop(self)
    }
}

/// Matchers are made from a compiled grammar; this impl lives here so
/// that `engine` does not depend on `matcher` (the module order is one-way).
impl CompiledGrammar {
    /// A fresh matcher at the start of the language.
    pub fn matcher(self: &Arc<Self>) -> EarleyMatcher {
        EarleyMatcher::new(self.clone())
    }
}

impl EarleyMatcher {
    pub(crate) fn new(g: Arc<CompiledGrammar>) -> Self {
        let init = g.initial_chart();
        let mut mem = MemStats::default();
        mem.observe(&init);
        EarleyMatcher {
            g,
            history: vec![init],
            finished: false,
            mem,
            key: Vec::new(),
            scratch: prune::Scratch::default(),
            limit: None,
            dfa_limit: None,
        }
    }

    /// The compiled grammar.
    pub fn grammar(&self) -> &Arc<CompiledGrammar> {
        &self.g
    }

    /// Memory accounting (current and peak).
    pub fn memory(&self) -> MemStats {
        self.mem
    }

    fn chart(&self) -> &Arc<Chart> {
        // history is never empty: it starts with the initial chart and
        // rollback never pops it.
        &self.history[self.history.len() - 1]
    }

    /// Number of Earley sets and items of the current (pruned) chart.
    pub fn chart_size(&self) -> (usize, usize) {
        let c = self.chart();
        (c.sets.len(), c.num_items())
    }

    /// The current chart as text (for debugging): one line per set.
    pub fn dump_chart(&self) -> String {
        let mut out = String::new();
        for (p, items) in &self.chart().sets {
            out.push_str(&format!(
                "{p}: {:?}\n",
                items
                    .iter()
                    .map(|i| (i.pos, i.st, i.origin))
                    .collect::<Vec<_>>()
            ));
        }
        out
    }

    /// The [`EngineConfig::max_set_items`](crate::EngineConfig::max_set_items)
    /// overflow of the last advance or mask, if it hit the bound: that
    /// advance refused its token (`NotAllowed`, though the token was not
    /// shown invalid), that mask left out the tokens whose parse reached
    /// the bound. Cleared by the next advance or mask; a mask served by
    /// the state cache was complete. [`Self::try_advance`] and
    /// [`Self::try_mask`] return it as an error instead.
    pub fn limit_exceeded(&self) -> Option<EarleyError> {
        if let (None, Some((_, TerminalTrouble::Failed(e)))) = (self.limit, &self.dfa_limit) {
            return Some(e.clone());
        }
        if let (None, Some((in_mask, TerminalTrouble::Overflow { regex, max }))) =
            (self.limit, &self.dfa_limit)
        {
            let max = *max;
            return Some(EarleyError::LimitExceeded {
                limit: Limit::DfaStates,
                max,
                place: format!(
                    "terminal {} ({})",
                    zapspec_grammar::limits::short_regex(regex),
                    if *in_mask { "mask" } else { "advance" }
                ),
                terminal: Some(regex.clone()),
                detail: format!(
                    "the lazily built DFA reached dfa_states {max}; tokens leading to new states were left out"
                ),
            });
        }
        let (n, at, in_mask) = self.limit?;
        let max = self.g.config().max_set_items;
        Some(EarleyError::LimitExceeded {
            limit: Limit::SetItems,
            max,
            place: format!(
                "Earley set at byte {at} ({})",
                if in_mask { "mask" } else { "advance" }
            ),
            terminal: None,
            detail: format!("the set reached {n} items, the bound max_set_items is {max}"),
        })
    }

    /// [`Constraint::advance`], with a set-size overflow reported as
    /// [`EarleyError::LimitExceeded`] ([`Limit::SetItems`]) rather than as
    /// a refused token; a refused token is [`EarleyError::Rejected`]. The
    /// state is unchanged on error.
    pub fn try_advance(&mut self, t: TokenId) -> Result<(), EarleyError> {
        self.limit = None;
        match Constraint::advance(self, t) {
            Ok(()) => Ok(()),
            Err(r) => Err(self.limit_exceeded().unwrap_or(EarleyError::Rejected(r))),
        }
    }

    /// [`Constraint::mask`], or [`EarleyError::LimitExceeded`]
    /// ([`Limit::SetItems`]) when an Earley set of the mask's byte-level
    /// walk reached the bound (the mask would be incomplete).
    pub fn try_mask(&mut self) -> Result<TokenSet, EarleyError> {
        let m = Constraint::mask(self);
        match self.limit_exceeded() {
            Some(e) => Err(e),
            None => Ok(m),
        }
    }

    /// Feeds raw bytes (not necessarily token-aligned) as one step; returns
    /// false and leaves the state unchanged when they are not a viable
    /// continuation. Rolling back one token undoes it.
    pub fn advance_bytes(&mut self, bytes: &[u8]) -> bool {
        self.try_bytes(bytes).is_ok()
    }

    /// Bytes the grammar forces from the current state: while exactly one
    /// byte continues a viable prefix and the grammar does not accept, that
    /// byte (at most `limit`). This is the byte-level fast-forward of
    /// jump-forward decoding: the forced bytes can be tokenized and fed to
    /// the model as one prefill. [`Constraint::forced_tokens`] is the
    /// token-level notion (a mask with one member), which on a 200k
    /// vocabulary rarely holds even when the bytes are forced (`{`, `{"`,
    /// `{"na` are all allowed before a forced `{"name":`).
    pub fn forced_bytes(&self, limit: usize) -> Vec<u8> {
        let chart = self.chart().clone();
        let mut w = Work::new(self.g.rules(), &chart);
        let mut out = Vec::new();
        let mut accepting = chart.accepting;
        while out.len() < limit && !accepting && !self.finished {
            let mut viable = (0..=255u8).filter(|&b| {
                let ok = w.push_byte(b);
                if ok {
                    w.pop();
                }
                ok
            });
            let (Some(b), None) = (viable.next(), viable.next()) else {
                break;
            };
            w.push_byte(b);
            out.push(b);
            accepting = w.top_accepting(0);
        }
        out
    }

    fn fingerprint(&mut self) -> u64 {
        let c = self.history[self.history.len() - 1].clone();
        c.key(&mut self.key);
        let mut h = FxHasher::default();
        for &k in &self.key {
            h.write_u32(k);
        }
        h.write_u32(c.accepting as u32);
        h.finish()
    }

    /// Parses `bytes` from the current state and commits the result.
    /// On failure returns the length of the rejected prefix, or 0 when a
    /// set reached `max_set_items` (recorded in `self.limit`).
    fn try_bytes(&mut self, bytes: &[u8]) -> Result<(), usize> {
        let g = self.g.clone();
        let chart = self.chart().clone();
        let mut w = Work::new(g.rules(), &chart);
        self.limit = None;
        self.dfa_limit = None;
        for (i, &b) in bytes.iter().enumerate() {
            if !w.push_byte(b) {
                g.observe_set(w.largest);
                if let Some(n) = w.overflow {
                    self.limit = Some((n, chart.last_pos() + i as u32 + 1, false));
                    return Err(0);
                }
                if let Some(t) = g.terminal_trouble() {
                    // not shown invalid: a lazy DFA refused a state, or a
                    // terminal could not be built
                    self.dfa_limit = Some((false, t));
                    return Err(0);
                }
                return Err(i + 1);
            }
        }
        let accepting = if bytes.is_empty() {
            chart.accepting
        } else {
            w.top_accepting(0)
        };
        let mut sets = chart.sets.clone();
        let base = chart.last_pos();
        let n = w.starts.len();
        for k in 0..n {
            let a = w.starts[k] as usize;
            let e = if k + 1 < n {
                w.starts[k + 1] as usize
            } else {
                w.items.len()
            };
            let mut v: Vec<Item> = w.items[a..e].to_vec();
            if g.config().pruning {
                v.sort_unstable();
            }
            sets.push((base + 1 + k as u32, v.into()));
        }
        self.mem.items_created += w.created;
        g.observe_set(w.largest);
        let mut next = Chart { sets, accepting };
        if g.config().pruning {
            prune::compact(g.rules(), &mut next, &mut self.scratch);
        }
        self.mem.observe(&next);
        self.history.push(Arc::new(next));
        Ok(())
    }

    /// The mask of the current chart; `Some((items, byte))` when a set of
    /// the walk reached `max_set_items` (the mask then leaves out the
    /// tokens whose parse reached it).
    fn compute_mask(&self, mask: &mut TokenSet) -> Option<(usize, u32)> {
        let g = &*self.g;
        let chart = self.chart();
        mask.clear();
        let rules = g.rules();
        let index = g.index();
        let vocab = &**index.vocab();
        let mut w = Work::new(rules, chart);
        if g.config().ci_cache {
            let last = chart.last();
            let mut groups: Vec<(u32, u32)> = last
                .iter()
                .filter_map(|x| rules.sym(x.pos).as_term().map(|t| (t, x.st)))
                .collect();
            groups.sort_unstable();
            groups.dedup();
            // Context-independent sets first, so the context-dependent
            // walks can skip remainders whose tokens are already allowed.
            let entries: Vec<_> = groups
                .iter()
                .map(|&(t, st)| {
                    let e = rules.terms[t as usize].ci(st, index);
                    e.allowed.or_into(mask);
                    e
                })
                .collect();
            for (&(t, st), entry) in groups.iter().zip(entries) {
                if entry.suffixes.num_tokens() == 0 {
                    continue;
                }
                let sym = Sym::term(t);
                let seeds = last
                    .iter()
                    .filter(|x| rules.sym(x.pos) == sym && x.st == st)
                    .map(|x| Item {
                        pos: x.pos + 1,
                        st: rules.init[x.pos as usize + 1],
                        origin: x.origin,
                    });
                if w.push_seeded(seeds) {
                    entry.suffixes.walk_uncovered(&mut w, mask);
                    w.pop();
                }
            }
        } else {
            index.trie().walk(&mut w, |toks| {
                for &t in toks {
                    mask.insert(t);
                }
            });
        }
        if chart.accepting {
            mask.insert(vocab.eos());
        }
        g.observe_set(w.largest.max(chart.last().len()));
        w.overflow.map(|n| (n, chart.last_pos() + 1))
    }

    /// The mask of a state the state cache does not hold: computed into
    /// `mask` (EOS bit when the chart accepts) and stored in the cache
    /// when complete.
    fn fill_uncached(&mut self, mask: &mut TokenSet) {
        if let Some((n, at)) = self.compute_mask(mask) {
            // Incomplete: not cached.
            self.limit = Some((n, at, true));
            return;
        }
        if let Some(t) = self.g.terminal_trouble() {
            // Possibly incomplete (a lazy DFA refused a state, or a
            // terminal could not be built): not cached.
            self.dfa_limit = Some((true, t));
            return;
        }
        if self.g.config().state_cache {
            self.g.cache_mask(&self.key, mask);
        }
    }

    /// [`Constraint::fill_mask`] lent to `f` instead of copied out: a
    /// state-cache hit hands `f` the cached set itself, so a caller that
    /// converts the mask into its own layout (a 32-bit bitmask row, as
    /// serving engines take it) reads it once instead of copying it and
    /// then reading the copy. A miss computes into `scratch` (which must
    /// have the vocabulary's size). The set `f` sees is exactly what
    /// `fill_mask` writes: empty once EOS was consumed, with the EOS bit
    /// exactly when the grammar accepts.
    pub fn with_mask<R>(&mut self, scratch: &mut TokenSet, f: impl FnOnce(&TokenSet) -> R) -> R {
        if zapspec_core::Matcher::finished(self) {
            scratch.clear();
            return f(scratch);
        }
        self.g.count_mask();
        self.limit = None;
        self.dfa_limit = None;
        if let Some(m) = self.cached_mask() {
            // The state cache holds masks with the EOS bit exactly when
            // the chart accepts, which is what `fill_mask` adds.
            return f(&m);
        }
        self.fill_uncached(scratch);
        let eos = self.g.vocab().eos();
        if self.chart().accepting {
            scratch.insert(eos);
        } else {
            scratch.remove(eos);
        }
        f(scratch)
    }

    fn cached_mask(&mut self) -> Option<Arc<TokenSet>> {
        if !self.g.config().state_cache {
            return None;
        }
        let c = self.chart().clone();
        c.key(&mut self.key);
        self.key.push(c.accepting as u32);
        self.g.cached_mask(&self.key)
    }
}

/// The grammar's own transitions; the EOS / finished / rollback
/// bookkeeping of [`Constraint`] comes from the blanket impl over
/// [`zapspec_core::Matcher`].
impl zapspec_core::Matcher for EarleyMatcher {
    fn vocab_size(&self) -> usize {
        self.g.vocab_len()
    }

    fn eos(&self) -> TokenId {
        self.g.vocab().eos()
    }

    /// The mask of the current chart, EOS bit included when the chart
    /// accepts (that is what the state cache holds): a cache hit copies
    /// `|V|/64` words, a miss walks the token trie
    /// (or the context-independent cache) and fills the state cache.
    fn fill_next(&mut self, mask: &mut TokenSet) {
        self.g.count_mask();
        self.limit = None;
        self.dfa_limit = None;
        if let Some(m) = self.cached_mask() {
            mask.words_mut().copy_from_slice(m.words());
            return;
        }
        self.fill_uncached(mask);
    }

    fn step(&mut self, t: TokenId) -> Result<(), RejectReason> {
        self.limit = None;
        self.dfa_limit = None;
        let vocab = self.g.vocab().clone();
        if (t as usize) >= vocab.len() {
            return Err(RejectReason::OutOfVocabulary);
        }
        if vocab.is_special(t) || vocab.token_bytes(t).is_empty() {
            // a special token, or one with no text: never in a text grammar
            return Err(RejectReason::NotAllowed);
        }
        let bytes = vocab.token_bytes(t);
        let fp = if self.g.config().rejected_prefixes {
            let fp = self.fingerprint();
            if self.g.rejected_prefix(fp, bytes) {
                // a prefix of the bytes was refused in an equivalent state
                // (the rejected-prefix cache): not allowed, found unparsed
                return Err(RejectReason::NotAllowed);
            }
            Some(fp)
        } else {
            None
        };
        match self.try_bytes(bytes) {
            Ok(()) => Ok(()),
            // A set-size overflow (`self.limit`): not a rejected prefix.
            Err(0) => Err(RejectReason::NotAllowed),
            Err(l) => {
                if let Some(fp) = fp {
                    self.g.reject_prefix(fp, bytes, l);
                }
                Err(RejectReason::NotAllowed)
            }
        }
    }

    fn unstep(&mut self, n: usize) {
        self.history.truncate(self.history.len() - n);
        let c = self.chart().clone();
        self.mem.observe(&c);
    }

    fn num_steps(&self) -> usize {
        self.history.len() - 1
    }

    fn is_complete(&self) -> bool {
        self.chart().accepting
    }

    fn finished(&self) -> bool {
        self.finished
    }

    fn set_finished(&mut self, finished: bool) {
        self.finished = finished;
    }
}

/// One look-ahead hook: [`LookAhead::mask_key`], so a one-step look-ahead
/// (OneStep-Cheap, Def. 9 of the future-validity paper) that forks and
/// advances each candidate can reuse the successor-set mass of every
/// candidate that lands in an equivalent parser state instead of masking
/// again.
impl LookAhead for EarleyMatcher {
    /// A 64-bit hash of what the state cache keys masks by: the chart's
    /// items with their origins ranked within the chart (positions
    /// dropped), whether it accepts, and whether EOS was consumed. Two
    /// states with equal charts in that sense have equal masks (the state
    /// cache relies on it); equal keys of unequal charts would need a
    /// 64-bit hash collision. `O(items of the chart)` per call, no mask.
    fn mask_key(&self) -> Option<u64> {
        let c = self.chart();
        let mut key = Vec::new();
        c.key(&mut key);
        let mut h = FxHasher::default();
        for &k in &key {
            h.write_u32(k);
        }
        h.write_u32(c.accepting as u32);
        h.write_u32(u32::from(self.finished));
        Some(h.finish())
    }

    /// Classes of equal successor mask, when every item of the current
    /// set that reads bytes waits on one terminal in one DFA state
    /// (inside a string, a number, a key): a token the terminal's DFA
    /// reads whole from that state, accepting at no inner byte boundary,
    /// leaves every such item at the state its last byte reaches and adds
    /// nothing else, so the charts after two tokens of equal end state
    /// differ only in their inner byte sets, which nothing refers to —
    /// their masks are equal. Those tokens are grouped by end state (the
    /// largest group is the implicit rest), from the terminal's cached
    /// end classes (`walk::EndClasses`, private); every other candidate (a
    /// token that ends the terminal or passes an accepting state inside
    /// it) is a class of its own. `false` when the set waits on several
    /// terminals or states, or none. `O(listed tokens + |V|/64)` once the
    /// terminal's classes for the state are cached; one trie walk the
    /// first time.
    fn successor_classes(&self, mask: &TokenSet, out: &mut zapspec_core::SuccessorClasses) -> bool {
        if self.finished {
            return false;
        }
        let rules = self.g.rules();
        let mut group: Option<(u32, u32)> = None;
        for x in self.chart().last() {
            if let Some(t) = rules.sym(x.pos).as_term() {
                match group {
                    None => group = Some((t, x.st)),
                    Some(g) if g == (t, x.st) => {}
                    Some(_) => return false,
                }
            }
        }
        let Some((t, st)) = group else {
            return false;
        };
        let index = self.g.index();
        let vocab_len = index.vocab().len();
        if mask.universe() != vocab_len {
            return false;
        }
        let cls = rules.terms[t as usize].end_classes(st, index.trie(), vocab_len);
        if cls.live.universe() != vocab_len {
            return false;
        }
        out.clear();
        for c in cls.others() {
            for &y in c {
                if mask.contains(y) {
                    out.push(y);
                }
            }
            out.close();
        }
        for &y in &cls.irregular {
            if mask.contains(y) {
                out.push_class(&[y]);
            }
        }
        // candidates that leave the terminal (or that it does not read
        // whole): one class each
        let eos = index.vocab().eos();
        for (wi, (&m, &l)) in mask.words().iter().zip(cls.live.words()).enumerate() {
            let mut w = m & !l;
            while w != 0 {
                let y = (wi * 64) as TokenId + w.trailing_zeros();
                if y != eos {
                    out.push_class(&[y]);
                }
                w &= w - 1;
            }
        }
        match cls.main {
            Some(r) if mask.contains(r) => out.set_rest(r),
            // the largest class is not in the mask (an incomplete mask):
            // nothing is grouped there
            Some(_) => return false,
            None => {}
        }
        true
    }
}
