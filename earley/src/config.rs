//! [`EngineConfig`]: every optimisation of the engine as one switch, so the
//! ablation of ZapFormat Table 3 is one field.

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
    /// Maximum number of masks kept by the pruned-state cache (per compiled
    /// grammar); the cache is cleared when it is full.
    pub state_cache_capacity: usize,
    /// Bounds on each terminal's NFA, DFA and DFA states (defaults:
    /// [`RegexLimits::default`], 16 MiB / 64 MiB / 100,000 states). A
    /// terminal over a bound is [`crate::EarleyError::LimitExceeded`]
    /// naming the rule and the terminal (a fused terminal over a bound is
    /// un-fused instead). Terminals are cached per vocabulary index by
    /// regex text, so one compiled earlier under larger limits is reused.
    pub regex_limits: RegexLimits,
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
            state_cache_capacity: 4096,
            regex_limits: RegexLimits::default(),
        }
    }
}

impl EngineConfig {
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
            state_cache_capacity: 0,
            regex_limits: RegexLimits::default(),
        }
    }
}
