//! [`EngineConfig`]: every optimisation of the engine as one switch, so the
//! ablation of ZapFormat Table 3 is one field.

use std::time::Duration;

use zapspec_grammar::RegexLimits;

/// Engine switches. `Default` turns everything on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EngineConfig {
    /// ZapFormat dynamic pruning (§4.2.3): compact the chart to the items
    /// from which an item of the last Earley set is reachable.
    pub pruning: bool,
    /// Context-independent token mask cache (§4.3): per (terminal, DFA state)
    /// the precomputed set of tokens that stay inside the terminal, plus the
    /// short trie of context-dependent suffixes. Off: every mask walks the
    /// whole token trie with the byte-level parser.
    pub ci_cache: bool,
    /// Pruned-state cache (§5.2): identical (pruned) parser states share
    /// their mask across sequences and requests.
    pub state_cache: bool,
    /// Rejected-prefix set (§4.4): byte prefixes of tokens that failed from a
    /// given parser state are remembered and rejected without parsing.
    pub rejected_prefixes: bool,
    /// Terminal fusion: non-recursive (and right/left-linear) nonterminals
    /// are compiled into single regex terminals before parsing, so lexemes
    /// such as JSON strings are one DFA (see `fuse`). Language-preserving.
    pub fuse_terminals: bool,
    /// Bound on the estimated size of a fused terminal (see
    /// [`crate::fuse::MAX_FUSED_WEIGHT`]); larger regular sub-grammars stay
    /// rules.
    pub fuse_max_weight: usize,
    /// Regular families (module `family`): nonterminals that recur
    /// through one another only as the last symbol of their rules (the
    /// right-linear grammar of an automaton with cycles, e.g. a JSON Schema
    /// key region) compiled into one lazily determinised terminal instead
    /// of being parsed byte by byte. Language-preserving; needs
    /// `fuse_terminals`. (Always determinised lazily, also under
    /// `IndexConfig::lazy_dfas: false`.)
    pub fuse_families: bool,
    /// Maximum number of masks kept by the pruned-state cache (per compiled
    /// grammar); the cache is cleared when it is full.
    pub state_cache_capacity: usize,
    /// Bound on the pruned-state cache's heap bytes (per compiled grammar:
    /// each mask is a dense set over the vocabulary, with its key): the
    /// cache is also cleared when the next mask would take it past this.
    /// Default 32 MiB: about 1,300 masks over o200k (25 KB each), all
    /// [`Self::state_cache_capacity`] masks over a 32k-token vocabulary.
    pub state_cache_bytes: usize,
    /// Bounds on each terminal's NFA, DFA and DFA states (defaults:
    /// [`RegexLimits::default`], 128 MiB / 64 MiB / 100,000 states). A
    /// terminal over a bound is [`crate::EarleyError::LimitExceeded`]
    /// naming the rule and the terminal (a fused terminal over a bound is
    /// un-fused instead). Terminals are cached per vocabulary index by
    /// regex text, so one compiled earlier under larger limits is reused.
    pub regex_limits: RegexLimits,
    /// Most items of one Earley set (default
    /// [`EngineConfig::DEFAULT_MAX_SET_ITEMS`]). A set is the closure after
    /// one byte; its size grows with the number of distinct origins that
    /// still have work, so only highly ambiguous grammars over long inputs
    /// (`s ::= s s | "a"`: about `2·n` items after `n` bytes) come near
    /// it. Exceeding it is [`crate::EarleyError::LimitExceeded`] with
    /// [`Limit::SetItems`](zapspec_grammar::Limit::SetItems): at compile
    /// time for the initial set, from [`crate::EarleyMatcher::try_advance`]
    /// / [`crate::EarleyMatcher::try_mask`] (and
    /// [`crate::EarleyMatcher::limit_exceeded`] after the `Constraint`
    /// methods, which refuse the token, or leave out of the mask the tokens
    /// whose parse hit the bound — never allowing a token they cannot
    /// check). It bounds each set's memory (12 bytes an item) and the
    /// work of one byte (completions scan at most this many items per
    /// origin set), not the cubic total of a long ambiguous parse.
    pub max_set_items: usize,
    /// Wall-clock budget of [`crate::Engine::compile`] (default
    /// [`EngineConfig::DEFAULT_COMPILE_TIME_BUDGET`], a safety net: a
    /// result should not depend on machine speed). Checked between
    /// terminal compilations and fusion rounds — one terminal's DFA is
    /// bounded by [`EngineConfig::regex_limits`] instead. Exceeding it is
    /// [`crate::EarleyError::LimitExceeded`] with
    /// [`Limit::Time`](zapspec_grammar::Limit::Time). The compiler reads
    /// the wall clock (`std::time::Instant`) for this budget only, at the
    /// start and at each check; `Duration::MAX` sets no budget and reads no
    /// clock.
    pub compile_time_budget: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            pruning: true,
            ci_cache: true,
            state_cache: true,
            rejected_prefixes: true,
            fuse_terminals: true,
            fuse_max_weight: crate::fuse::MAX_FUSED_WEIGHT,
            fuse_families: true,
            state_cache_capacity: 4096,
            state_cache_bytes: 32 << 20,
            regex_limits: RegexLimits::default(),
            max_set_items: Self::DEFAULT_MAX_SET_ITEMS,
            compile_time_budget: Self::DEFAULT_COMPILE_TIME_BUDGET,
        }
    }
}

impl EngineConfig {
    /// Default of [`EngineConfig::max_set_items`]: 100,000 items (1.2 MB a
    /// set). The largest set measured over real grammars is 56 items: the
    /// full soak (`earley/tests/soak.rs`: the shipped GBNF grammars and 48
    /// MaskBench schemas, 10,000 random walks over o200k, 267k masks);
    /// the cubic `s ::= s s | "a"` reaches 604 after 300 bytes. So
    /// only an adversarial grammar and input come near it.
    pub const DEFAULT_MAX_SET_ITEMS: usize = 100_000;
    /// Default of [`EngineConfig::compile_time_budget`]: 60 s.
    pub const DEFAULT_COMPILE_TIME_BUDGET: Duration = Duration::from_secs(60);

    /// Everything off: a plain byte-level Earley recognizer walking the
    /// token trie (the "- pruning & cache" row of Table 3, and more).
    pub fn baseline() -> Self {
        EngineConfig {
            pruning: false,
            ci_cache: false,
            state_cache: false,
            rejected_prefixes: false,
            fuse_terminals: false,
            fuse_max_weight: crate::fuse::MAX_FUSED_WEIGHT,
            fuse_families: false,
            state_cache_capacity: 0,
            state_cache_bytes: 0,
            regex_limits: RegexLimits::default(),
            max_set_items: Self::DEFAULT_MAX_SET_ITEMS,
            compile_time_budget: Self::DEFAULT_COMPILE_TIME_BUDGET,
        }
    }
}
