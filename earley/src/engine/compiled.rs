//! [`Engine`] and [`CompiledGrammar`]: a grammar compiled for a
//! [`VocabIndex`] (fusion, rules, the initial Earley set, under the
//! compile-time budget), the caches its matchers share, its counters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rustc_hash::FxBuildHasher;

use zapspec_core::{TokenSet, Vocabulary};
use zapspec_grammar::{Grammar, Terminal};

use crate::chart::{initial_chart, Chart};
use crate::config::EngineConfig;
use crate::error::EarleyError;
use crate::grammar::Rules;
use crate::prune;
use crate::terminal::ByteDfa;

use super::{SharedVocab, VocabIndex};

/// The engine for one vocabulary: compiles grammars against a shared
/// [`VocabIndex`]. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Engine {
    index: Arc<VocabIndex>,
}

impl Engine {
    /// Builds the per-vocabulary index (the token trie; see
    /// [`VocabIndex::new`] for its cost).
    pub fn new<V: Vocabulary + Send + Sync + 'static>(vocab: Arc<V>) -> Self {
        Engine {
            index: VocabIndex::new(vocab),
        }
    }

    /// An engine over an existing index.
    pub fn with_index(index: Arc<VocabIndex>) -> Self {
        Engine { index }
    }

    /// The shared per-vocabulary index.
    pub fn index(&self) -> &Arc<VocabIndex> {
        &self.index
    }

    /// Compiles `grammar` for this vocabulary.
    pub fn compile(
        &self,
        grammar: &Grammar,
        config: EngineConfig,
    ) -> Result<Arc<CompiledGrammar>, EarleyError> {
        CompiledGrammar::new(grammar, self.index.clone(), config)
    }
}

/// A grammar compiled for a vocabulary; makes matchers. Holds the
/// pruned-state cache and the rejected-prefix set, shared by all its
/// matchers (across sequences and requests).
///
/// ## Threads
///
/// `CompiledGrammar` (like [`VocabIndex`] and [`Engine`]) is `Send + Sync`
/// and is meant to be shared by `Arc` between the threads of a server; its
/// matchers ([`EarleyMatcher`](crate::EarleyMatcher)) are `Send + Sync` too and may be moved to
/// (or masked on) any thread — see [`crate::batch`], which masks a batch of
/// them in parallel. Everything the matchers of one grammar share is
/// behind a lock or written once: the pruned-state cache is an `RwLock`
/// (hits take the read lock, so concurrent hits do not serialise), the
/// rejected-prefix set a `Mutex`, the counters atomics, and the
/// context-independent entries of the shared [`VocabIndex`] slots behind
/// an `RwLock` each (a cold entry is computed outside the lock; two threads
/// that miss at once may both compute it, and the first stored is kept). No
/// lock is held while a mask is computed or a token parsed, and the
/// shared state only ever caches values that are a function of the parser
/// state, so a mask does not depend on which thread, or which other
/// sequence, filled a cache first. A `const` assertion in
/// [`crate::batch`] checks the bounds at compile time.
pub struct CompiledGrammar {
    pub(super) index: Arc<VocabIndex>,
    pub(super) rules: Rules,
    pub(super) config: EngineConfig,
    pub(super) initial: Arc<Chart>,
    pub(super) state_cache: RwLock<HashMap<Box<[u32]>, Arc<TokenSet>, FxBuildHasher>>,
    pub(super) rejected: Mutex<RejectedPrefixes>,
    pub(super) counters: AtomicCounters,
    pub(super) fused: Option<Grammar>,
}

impl Drop for CompiledGrammar {
    fn drop(&mut self) {
        self.index.release(&self.rules.terms);
    }
}

/// [`EngineConfig::compile_time_budget`] of one compilation: the one
/// place compilation reads the wall clock (`std::time::Instant`), for that
/// documented budget; `Duration::MAX` (no budget) reads no clock.
struct Deadline {
    /// When compilation started; `None` without a budget.
    start: Option<std::time::Instant>,
    budget: std::time::Duration,
}

impl Deadline {
    fn new(budget: std::time::Duration) -> Self {
        Deadline {
            start: (budget != std::time::Duration::MAX).then(std::time::Instant::now),
            budget,
        }
    }

    /// `LimitExceeded { time_budget }` at `place` once the budget is spent.
    fn check(&self, place: &str) -> Result<(), EarleyError> {
        let Some(spent) = self.start.map(|t| t.elapsed()) else {
            return Ok(());
        };
        if spent <= self.budget {
            return Ok(());
        }
        Err(EarleyError::LimitExceeded {
            limit: zapspec_grammar::Limit::Time,
            max: usize::try_from(self.budget.as_millis()).unwrap_or(usize::MAX),
            place: format!("grammar compilation, {place}"),
            terminal: None,
            detail: format!(
                "{:.3} s spent, more than compile_time_budget {:.3} s (max in ms)",
                spent.as_secs_f64(),
                self.budget.as_secs_f64()
            ),
        })
    }
}

/// The rejected-prefix set (§4.4): per parser-state fingerprint, the byte
/// prefixes known to have no viable continuation from that state.
type RejectedPrefixes = HashMap<u64, Vec<Box<[u8]>>, FxBuildHasher>;

/// The [`Counters`] of a compiled grammar as atomics, so matchers on
/// different threads count without a lock (relaxed: they are statistics,
/// read as a snapshot by [`CompiledGrammar::counters`]).
#[derive(Debug, Default)]
pub(super) struct AtomicCounters {
    masks: AtomicU64,
    state_cache_hits: AtomicU64,
    rejected_prefix_hits: AtomicU64,
    peak_set_items: AtomicUsize,
}

impl AtomicCounters {
    /// Adds one to `c`.
    #[inline]
    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a set of `n` items.
    #[inline]
    fn observe_set(&self, n: usize) {
        if n > self.peak_set_items.load(Ordering::Relaxed) {
            self.peak_set_items.fetch_max(n, Ordering::Relaxed);
        }
    }
}

/// Cache hit counters of a compiled grammar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Masks asked for (`fill_mask` calls before the end of the sequence).
    pub masks: u64,
    /// Of those, masks served by the pruned-state cache.
    pub state_cache_hits: u64,
    /// Tokens rejected by the rejected-prefix set without parsing.
    pub rejected_prefix_hits: u64,
    /// Largest Earley set built so far by an advance or a mask of any
    /// matcher (items; what [`EngineConfig::max_set_items`] bounds).
    pub peak_set_items: usize,
}

impl std::fmt::Debug for CompiledGrammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGrammar")
            .field("positions", &self.rules.num_positions())
            .field("terminals", &self.rules.terms.len())
            .field("config", &self.config)
            .finish()
    }
}

impl CompiledGrammar {
    /// A terminal whose automaton left the last advance or mask possibly
    /// incomplete: a lazy DFA that refused a state for its bound (module
    /// `zapspec_grammar::lazy`), or a deferred build that failed
    /// ([`TermEntry::dfa`](crate::ci_cache::TermEntry::dfa)). One atomic load each when no automaton in the
    /// process has. Unbuilt terminals are not built to be asked.
    pub(crate) fn terminal_trouble(&self) -> Option<TerminalTrouble> {
        if zapspec_grammar::lazy::any_overflowed() {
            let over = self.rules.terms.iter().find_map(|t| {
                let d = t.built()?;
                d.state_bound()
                    .filter(|_| d.overflowed())
                    .map(|max| TerminalTrouble::Overflow {
                        regex: t.regex.to_string(),
                        max,
                    })
            });
            if over.is_some() {
                return over;
            }
        }
        self.rules
            .terms
            .iter()
            .find_map(|t| t.build_error().cloned().map(TerminalTrouble::Failed))
    }

    /// How many of the grammar's terminals have their automaton built, of
    /// how many: a terminal deferred at compile time
    /// ([`IndexConfig::deferred_terminals`](crate::IndexConfig::deferred_terminals)) is built by the first mask or
    /// step that reaches it, so a terminal no parse reached is still
    /// unbuilt.
    pub fn terminals_built(&self) -> (usize, usize) {
        let t = &self.rules.terms;
        (t.iter().filter(|e| e.built().is_some()).count(), t.len())
    }

    /// Compiles `grammar` over `index`.
    pub fn new(
        grammar: &Grammar,
        index: Arc<VocabIndex>,
        config: EngineConfig,
    ) -> Result<Arc<Self>, EarleyError> {
        index.enforce_bound();
        let deadline = Deadline::new(config.compile_time_budget);
        let (mut rules, fused) = Self::fused_rules(grammar, &index, &config, &deadline)?;
        rules.max_set_items = config.max_set_items;
        deadline.check("after terminal compilation")?;
        let mut chart = initial_chart(&rules).map_err(|n| EarleyError::LimitExceeded {
            limit: zapspec_grammar::Limit::SetItems,
            max: config.max_set_items,
            place: "the initial Earley set (compile)".into(),
            terminal: None,
            detail: format!(
                "the closure of the start symbol reached {n} items, more than max_set_items {}",
                config.max_set_items
            ),
        })?;
        if config.pruning {
            prune::compact(&rules, &mut chart, &mut prune::Scratch::default());
        }
        let counters = AtomicCounters::default();
        counters.observe_set(chart.last().len());
        Ok(Arc::new(CompiledGrammar {
            index,
            rules,
            config,
            initial: Arc::new(chart),
            state_cache: RwLock::new(HashMap::default()),
            rejected: Mutex::new(HashMap::default()),
            counters,
            fused,
        }))
    }

    /// Terminal fusion, then the rules. A fused terminal the regex compiler
    /// refuses (fusion bounds size and nesting, but an NFA or DFA can still
    /// exceed its limits) un-fuses the nonterminal it came from and fusion
    /// is redone; after a few rounds, or when an original terminal is the
    /// culprit, the rules are used as written. Fusion is an optimisation:
    /// the language never depends on it.
    fn fused_rules(
        grammar: &Grammar,
        index: &Arc<VocabIndex>,
        config: &EngineConfig,
        deadline: &Deadline,
    ) -> Result<(Rules, Option<Grammar>), EarleyError> {
        // Compiled from a HIR where one is known (the grammar's table, a
        // literal's or class's, a fused regex's), not from a parse of the
        // text.
        let term = |t: &Terminal| {
            deadline.check("terminal compilation")?;
            let limits = &config.regex_limits;
            match t {
                Terminal::Regex(text) => match grammar.regex_hir_shared(text) {
                    Some(hir) => index.terminal_parsed(t, hir, limits),
                    None => index.terminal(t, limits),
                },
                Terminal::And(a, b) => index.terminal_and(
                    t,
                    || grammar.regex_hir_shared(a).cloned(),
                    || grammar.regex_hir_shared(b).cloned(),
                    limits,
                ),
                Terminal::Except(re, _) => {
                    index.terminal_except(t, || grammar.regex_hir_shared(re).cloned(), limits)
                }
                Terminal::Avoid(re, _) => {
                    index.terminal_avoid(t, || grammar.regex_hir_shared(re).cloned(), limits)
                }
                _ => index.terminal_hir_on_miss(t, || ByteDfa::hir_of(t), limits),
            }
        };
        if config.fuse_terminals {
            let mut excluded: Vec<zapspec_grammar::NtId> = Vec::new();
            for round in 0..8 {
                deadline.check(&format!("terminal fusion, round {}", round + 1))?;
                let fused = crate::fuse::fuse_with(
                    grammar,
                    config.fuse_max_weight,
                    &excluded,
                    config.fuse_families,
                );
                let re = &fused.terminal;
                let mut hirs = fused.hirs(grammar);
                let term = |t: &Terminal| {
                    if let Terminal::Regex(text) = t {
                        if let Some(f) = fused.families.get(text) {
                            deadline.check("terminal compilation")?;
                            return index.terminal_family(f, &config.regex_limits);
                        }
                        if grammar.regex_hir(text).is_none() {
                            deadline.check("terminal compilation")?;
                            return index.terminal_hir_on_miss(
                                t,
                                || hirs.get(text),
                                &config.regex_limits,
                            );
                        }
                    }
                    term(t)
                };
                match Rules::new(&fused.grammar, term) {
                    Ok(r) => return Ok((r, Some(fused.grammar))),
                    Err(e) => {
                        let regex = match &e {
                            EarleyError::Terminal { regex, .. }
                            | EarleyError::LimitExceeded {
                                terminal: Some(regex),
                                ..
                            } => regex,
                            _ => return Err(e),
                        };
                        let culprit = re.iter().position(|r| {
                            r.as_ref().is_some_and(|r| {
                                ByteDfa::regex_of(&Terminal::Regex(r.clone())) == *regex
                            })
                        });
                        let Some(nt) = culprit else { break };
                        let nt = zapspec_grammar::NtId(nt as u32);
                        if let Some(e) = Self::same_when_unfused(grammar, nt, &e) {
                            return Err(e);
                        }
                        excluded.push(nt);
                    }
                }
            }
        }
        Ok((Rules::new(grammar, term)?, None))
    }

    /// When the fused terminal of `nt` exceeded a limit (`e`) and `nt` is
    /// one rule of one regex terminal, un-fusing it would compile the same
    /// language again (twice the time of a refusal, 0.75 s in release
    /// for the `gbnf` fuzz target's exponential DFA): the refusal, placed
    /// as the un-fused grammar would place it (rule `nt`, its terminal).
    fn same_when_unfused(
        grammar: &Grammar,
        nt: zapspec_grammar::NtId,
        e: &EarleyError,
    ) -> Option<EarleyError> {
        let mut rules = grammar.rules.iter().filter(|r| r.lhs == nt);
        let (Some(rule), None) = (rules.next(), rules.next()) else {
            return None;
        };
        let [zapspec_grammar::Symbol::T(t @ Terminal::Regex(_))] = rule.rhs.as_slice() else {
            return None;
        };
        let regex = ByteDfa::regex_of(t);
        let place = format!(
            "rule `{}`, terminal {}",
            grammar.name(nt),
            zapspec_grammar::limits::short_regex(&regex)
        );
        match e.clone() {
            EarleyError::LimitExceeded {
                limit, max, detail, ..
            } => Some(EarleyError::LimitExceeded {
                limit,
                max,
                place,
                terminal: Some(regex),
                detail,
            }),
            _ => None,
        }
    }

    /// The switches this grammar was compiled with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The per-vocabulary index the grammar was compiled against.
    pub fn index(&self) -> &Arc<VocabIndex> {
        &self.index
    }

    /// The vocabulary the grammar was compiled for.
    pub fn vocab(&self) -> &SharedVocab {
        &self.index.vocab
    }

    /// The grammar after terminal fusion (when enabled).
    pub fn fused_grammar(&self) -> Option<&Grammar> {
        self.fused.as_ref()
    }

    /// Number of distinct terminals and of dotted rule positions.
    pub fn size(&self) -> (usize, usize) {
        (self.rules.terms.len(), self.rules.num_positions())
    }

    /// Cache counters so far.
    pub fn counters(&self) -> Counters {
        let c = &self.counters;
        Counters {
            masks: c.masks.load(Ordering::Relaxed),
            state_cache_hits: c.state_cache_hits.load(Ordering::Relaxed),
            rejected_prefix_hits: c.rejected_prefix_hits.load(Ordering::Relaxed),
            peak_set_items: c.peak_set_items.load(Ordering::Relaxed),
        }
    }

    /// Number of masks in the pruned-state cache.
    pub fn state_cache_len(&self) -> usize {
        self.state_cache
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    pub(crate) fn vocab_len(&self) -> usize {
        self.index.vocab.len()
    }

    /// The flattened rules (what a matcher's charts are over).
    #[inline]
    pub(crate) fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The (pruned) chart of the empty input, shared by every new matcher.
    pub(crate) fn initial_chart(&self) -> Arc<Chart> {
        self.initial.clone()
    }

    /// The pruned-state cache's mask for the chart key `key`, counting a
    /// hit.
    pub(crate) fn cached_mask(&self, key: &[u32]) -> Option<Arc<TokenSet>> {
        let m = self
            .state_cache
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned();
        if m.is_some() {
            AtomicCounters::bump(&self.counters.state_cache_hits);
        }
        m
    }

    /// Stores `mask` in the pruned-state cache under the chart key `key`
    /// (the cache is emptied when it holds
    /// [`EngineConfig::state_cache_capacity`] masks, or when this one
    /// would take it past [`EngineConfig::state_cache_bytes`]).
    pub(crate) fn cache_mask(&self, key: &[u32], mask: &TokenSet) {
        // a mask's bytes: its `Arc` (header, set, words) and its key
        let each = 2 * std::mem::size_of::<usize>()
            + std::mem::size_of::<TokenSet>()
            + mask.heap_bytes()
            + std::mem::size_of_val(key);
        let capacity = self
            .config
            .state_cache_capacity
            .min(self.config.state_cache_bytes / each);
        let mut cache = self.state_cache.write().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= capacity {
            cache.clear();
        }
        if capacity > 0 {
            cache.insert(key.into(), Arc::new(mask.clone()));
        }
    }

    /// True when a prefix of `bytes` is known to have no viable
    /// continuation from the parser state of fingerprint `fp` (the
    /// rejected-prefix set, §4.4), counting a hit.
    pub(crate) fn rejected_prefix(&self, fp: u64, bytes: &[u8]) -> bool {
        let hit = self
            .rejected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fp)
            .is_some_and(|v| v.iter().any(|p| bytes.starts_with(p)));
        if hit {
            AtomicCounters::bump(&self.counters.rejected_prefix_hits);
        }
        hit
    }

    /// Records that `token[..len]`, the part of a token's bytes parsed
    /// until it failed, has no viable continuation from the parser state
    /// of fingerprint `fp` (unless a recorded prefix covers `token`).
    pub(crate) fn reject_prefix(&self, fp: u64, token: &[u8], len: usize) {
        let mut r = self.rejected.lock().unwrap_or_else(|e| e.into_inner());
        let v = r.entry(fp).or_default();
        if !v.iter().any(|p| token.starts_with(p)) {
            v.push(token[..len].into());
        }
    }

    /// Counts a mask asked for ([`Counters::masks`]).
    #[inline]
    pub(crate) fn count_mask(&self) {
        AtomicCounters::bump(&self.counters.masks);
    }

    /// Records an Earley set of `n` items ([`Counters::peak_set_items`]).
    #[inline]
    pub(crate) fn observe_set(&self, n: usize) {
        self.counters.observe_set(n);
    }
}

/// Why a terminal's automaton may have left a mask or advance incomplete
/// ([`CompiledGrammar::terminal_trouble`]).
#[derive(Clone, Debug)]
pub(crate) enum TerminalTrouble {
    /// A lazy DFA refused a state for its bound `max` (`dfa_states`).
    Overflow { regex: String, max: usize },
    /// A deferred build failed (the terminal matches nothing).
    Failed(EarleyError),
}
