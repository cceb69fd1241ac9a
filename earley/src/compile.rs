//! Regex → [`ByteDfa`]: the entry points that pick the construction. A
//! long counted repetition of a prefix-free unit is built as a counter
//! times the unit's automaton ([`crate::counted`]); a regex without
//! look-around as a lazy automaton over its Thompson NFA (`lazy`: states
//! on first use); a regex with look-around by `regex-automata`'s NFA and
//! dense DFA ([`ByteDfa::from_regex_general`], which is also the eager
//! reference the others are tested against). All check the NFA size bound
//! first.
//!
//! Cost: the eager construction is one determinisation (bounded by
//! [`RegexLimits`]); the counted one is linear in the count; the lazy one
//! is the NFA at compile time and one subset-construction step per state
//! a mask or step first reaches.

use zapspec_grammar::{Limit, RegexLimits, Terminal};

use crate::error::EarleyError;
use crate::terminal::{limit_error, ByteDfa};

impl ByteDfa {
    /// Compiles a terminal under the default [`RegexLimits`].
    pub fn compile(t: &Terminal) -> Result<Self, EarleyError> {
        Self::from_regex(&Self::regex_of(t))
    }

    /// Compiles a regex (anchored at both ends; bytes, not chars) under the
    /// default [`RegexLimits`].
    pub fn from_regex(pattern: &str) -> Result<Self, EarleyError> {
        Self::from_regex_with(pattern, &RegexLimits::default())
    }

    /// Compiles a regex under explicit limits: a regex that does not parse
    /// is [`EarleyError::Terminal`]; an NFA, DFA or state count over a
    /// limit is [`EarleyError::LimitExceeded`] naming the limit and the
    /// terminal.
    pub fn from_regex_with(pattern: &str, limits: &RegexLimits) -> Result<Self, EarleyError> {
        Self::from_regex_opts(pattern, limits, true)
    }

    /// [`ByteDfa::from_regex_with`], choosing whether a regex without
    /// look-around is built lazily (`lazy`, the default) or determinised
    /// at once (the ablation of [`crate::IndexConfig::lazy_dfas`]).
    pub fn from_regex_opts(
        pattern: &str,
        limits: &RegexLimits,
        lazy: bool,
    ) -> Result<Self, EarleyError> {
        let err = |reason: String| EarleyError::Terminal {
            regex: pattern.to_string(),
            reason,
        };
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .map_err(|e| err(e.to_string()))?;
        Self::from_parsed(&hir, pattern, limits, lazy)
    }

    /// [`ByteDfa::from_regex_opts`] of a regex already parsed: `hir` is the
    /// parse of `pattern` or an equivalent HIR (one the text was printed
    /// from, [`zapspec_grammar::Grammar::regex_hir`]); `pattern` names the
    /// terminal in errors.
    pub fn from_parsed(
        hir: &regex_syntax::hir::Hir,
        pattern: &str,
        limits: &RegexLimits,
        lazy: bool,
    ) -> Result<Self, EarleyError> {
        // A long counted repetition of a prefix-free unit: built as a
        // counter times the unit's automaton (module `counted`). Its states
        // are computed from the layout, not stored, and its cache entries
        // are numbered per distance to the bounds (`ByteDfa::ci_slot`):
        // `dfa_states` bounds the states it stores (the prefix, one count,
        // the tail), not the count, and the expansion's NFA bound does not
        // apply.
        let small = |h: &regex_syntax::hir::Hir| {
            Self::check_nfa_bound(h, pattern, limits)?;
            Self::from_hir(h, pattern, limits)
        };
        let too_many = |n: u64| {
            limit_error(
                pattern,
                Limit::DfaStates,
                limits.dfa_states,
                format!(
                    "the counted repetition's automaton stores {n} states, more than {}",
                    limits.dfa_states
                ),
            )
        };
        if let Some(d) = crate::counted::build(hir, limits.dfa_states, small, too_many) {
            return d;
        }
        // Astronomically large expansions are refused before anything is
        // built.
        Self::check_nfa_bound(hir, pattern, limits)?;
        // Without look-around, states are built on first use (module
        // `lazy`): exact liveness needs no assertion-free reading.
        if lazy && hir.properties().look_set().is_empty() {
            return Self::lazy_from_hir(hir, pattern, limits);
        }
        Self::from_hir(hir, pattern, limits)
    }
}
