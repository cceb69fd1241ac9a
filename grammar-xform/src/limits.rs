//! Resource limits of grammar compilation.
//!
//! Every compile step whose cost a hostile input can blow up has a bound,
//! and exceeding it is a typed error ([`crate::GrammarError::LimitExceeded`],
//! `zapspec_jsonschema::SchemaError::LimitExceeded`, and the Earley
//! engine's `EarleyError::LimitExceeded`) that names the [`Limit`] and the
//! place (rule name, terminal, or JSON pointer) where it was hit — never a
//! panic, an out-of-memory kill or a stack overflow.
//!
//! | limit | default | where it is configured |
//! |---|---|---|
//! | [`Limit::NfaBytes`] | 128 MiB ([`RegexLimits::DEFAULT_NFA_BYTES`]) | [`RegexLimits::nfa_bytes`] |
//! | [`Limit::DfaBytes`] | 64 MiB ([`RegexLimits::DEFAULT_DFA_BYTES`]) | [`RegexLimits::dfa_bytes`] (table and determinisation scratch) |
//! | [`Limit::DfaStates`] | 100,000 ([`RegexLimits::DEFAULT_DFA_STATES`]) | [`RegexLimits::dfa_states`] |
//! | [`Limit::Depth`] (GBNF groups) | 1000 ([`crate::gbnf::MAX_NESTING`]) | fixed |
//! | [`Limit::Depth`] (JSON Schema subschema nesting, `$ref` chains) | 512 | `JsonSchemaOptions::max_depth` |
//! | [`Limit::Depth`] (JSON document nesting) | 2048 | `JsonSchemaOptions::max_json_depth` |
//! | [`Limit::Depth`] (`$ref`/`allOf`/`not` inlining at one node) | 48 | fixed |
//! | [`Limit::Branches`] | 256 | `JsonSchemaOptions::max_branches` |
//! | [`Limit::Nonterminals`] | 200,000 | `JsonSchemaOptions::max_nonterminals` |
//! | [`Limit::Time`] | 60 s (a safety net: results should not depend on machine speed) | `JsonSchemaOptions::time_budget`; the Earley engine's `EngineConfig::compile_time_budget` (checked between terminal compilations and fusion rounds) |
//! | [`Limit::SetItems`] | 100,000 (the largest set measured over the shipped grammars and 48 MaskBench schemas is 56 items; see `EngineConfig::DEFAULT_MAX_SET_ITEMS`) | the Earley engine's `EngineConfig::max_set_items` |
//!
//! The regex limits are `regex-automata`'s own builder limits
//! (`thompson::Config::nfa_size_limit`, `dense::Config::dfa_size_limit`
//! and `determinize_size_limit`); a build error for exceeding one of them
//! is reported as [`Limit::NfaBytes`] / [`Limit::DfaBytes`], distinct from
//! a regex that does not parse (`GrammarError::Regex`).

use std::fmt;

/// A resource bound that a compile step can exceed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Heap bytes of one terminal's Thompson NFA.
    NfaBytes,
    /// Heap bytes of one terminal's dense DFA, or of the scratch space of
    /// its determinisation.
    DfaBytes,
    /// States of one terminal's DFA.
    DfaStates,
    /// Nesting depth: GBNF groups, JSON Schema subschemas, `$ref`/`allOf`
    /// inlining.
    Depth,
    /// Branches one schema node expands to (`anyOf`/`oneOf` distributed
    /// over `allOf`, `dependencies`, `not`).
    Branches,
    /// Nonterminals of the generated grammar.
    Nonterminals,
    /// Wall-clock time of one compilation.
    Time,
    /// Items of one Earley set (the Earley engine's chart, in an advance,
    /// a mask's byte-level walk, or the initial set at compile time).
    SetItems,
}

impl Limit {
    /// The limit's name, as it appears in error messages and options.
    pub fn name(self) -> &'static str {
        match self {
            Limit::NfaBytes => "nfa_bytes",
            Limit::DfaBytes => "dfa_bytes",
            Limit::DfaStates => "dfa_states",
            Limit::Depth => "depth",
            Limit::Branches => "branches",
            Limit::Nonterminals => "nonterminals",
            Limit::Time => "time_budget",
            Limit::SetItems => "set_items",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bounds on compiling one regex (or literal / class) terminal into a DFA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegexLimits {
    /// Most heap bytes of the Thompson NFA (`thompson::Config::nfa_size_limit`).
    pub nfa_bytes: usize,
    /// Most heap bytes of the dense DFA and of its determinisation scratch
    /// (`dense::Config::dfa_size_limit` / `determinize_size_limit`).
    pub dfa_bytes: usize,
    /// Most states of the DFA (bounds determinisation through the table
    /// size, and is checked again while the DFA is re-tabled). The Earley
    /// engine's counted repetitions (`P X{m,n} S`, transitions computed
    /// from a layout) count the states they store — the prefix, one
    /// count's block and `S` — not `n` times the block.
    pub dfa_states: usize,
}

impl RegexLimits {
    /// Default of [`RegexLimits::nfa_bytes`]. It is `regex-automata`'s
    /// heap use *during* compilation, several times the finished NFA: a
    /// MaskBench string with `maxLength: 1024` and a `pattern` (a
    /// 1,017-fold counted repetition of the JSON string-character class)
    /// needs 32 MiB, the most of any terminal in the shared set; this
    /// default leaves 4× room over it.
    pub const DEFAULT_NFA_BYTES: usize = 128 << 20;
    /// Default of [`RegexLimits::dfa_bytes`].
    pub const DEFAULT_DFA_BYTES: usize = 64 << 20;
    /// Default of [`RegexLimits::dfa_states`].
    pub const DEFAULT_DFA_STATES: usize = 100_000;

    /// The dense-DFA builder's `(dfa_size_limit, determinize_size_limit)`
    /// for an NFA whose byte-class alphabet has `alphabet_len` classes.
    ///
    /// The state bound becomes a bound on the table, so that
    /// determinisation stops at `dfa_states` states instead of running on
    /// to `dfa_bytes` (a row is the alphabet, plus end-of-input, rounded up
    /// to a power of two, of 4-byte state ids). The determinisation
    /// scratch (the NFA state sets of the DFA states) grows with the
    /// states too and is bounded alike, generously. Both are capped by
    /// `dfa_bytes`.
    pub fn dense_builder_limits(&self, alphabet_len: usize) -> (usize, usize) {
        let stride = alphabet_len.next_power_of_two();
        let table_limit = self
            .dfa_states
            .saturating_add(3) // dead, quit and sentinel states
            .saturating_mul(stride * std::mem::size_of::<u32>())
            .min(self.dfa_bytes);
        let scratch_limit = table_limit.max(8 << 20).min(self.dfa_bytes);
        (table_limit, scratch_limit)
    }
}

impl Default for RegexLimits {
    fn default() -> Self {
        RegexLimits {
            nfa_bytes: Self::DEFAULT_NFA_BYTES,
            dfa_bytes: Self::DEFAULT_DFA_BYTES,
            dfa_states: Self::DEFAULT_DFA_STATES,
        }
    }
}

/// A short rendering of a terminal's regex for error messages (the first
/// 80 characters).
pub fn short_regex(re: &str) -> String {
    const MAX: usize = 80;
    if re.chars().count() <= MAX {
        format!("/{re}/")
    } else {
        let head: String = re.chars().take(MAX).collect();
        format!("/{head}…/ ({} bytes)", re.len())
    }
}

/// A lower bound on the heap bytes the Thompson NFA builder counts against
/// its size limit for `hir` (saturating): one NFA state of at least
/// [`NFA_STATE_BYTES`] per literal byte, class and look-around assertion,
/// `x{m,n}` as `n` copies of `x`. Compilers
/// check it against [`RegexLimits::nfa_bytes`] before building the NFA, so a
/// regex whose expansion is astronomically large (`.{2}{2}…{2}`: 2^60
/// copies) is refused at once instead of after building `nfa_bytes` of NFA
/// (about a second at the default). Being a lower bound, it never refuses
/// a regex the builder would accept (a property test checks it against
/// `regex-automata`'s own `memory_usage` on random regexes).
pub fn nfa_bytes_lower_bound(hir: &regex_syntax::hir::Hir) -> u128 {
    nfa_states_lower_bound(hir).saturating_mul(NFA_STATE_BYTES as u128)
}

/// Bytes of one Thompson NFA state, at least: `regex-automata`'s NFA
/// builder holds each state as an enum of 32 bytes on 64-bit targets;
/// half that leaves room for states this count shares that the builder
/// does not (the property test passes at 24).
pub const NFA_STATE_BYTES: usize = 16;

fn nfa_states_lower_bound(hir: &regex_syntax::hir::Hir) -> u128 {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Empty => 0,
        HirKind::Literal(l) => l.0.len() as u128,
        HirKind::Class(_) | HirKind::Look(_) => 1,
        HirKind::Repetition(r) => {
            // `x{m,n}` is compiled as `n` copies of `x` (`m` of them
            // optional past the first `m`), `x{m,}` as `m` copies and a
            // loop over one more.
            let copies = match r.max {
                Some(n) => n as u128,
                None => r.min as u128 + 1,
            };
            nfa_states_lower_bound(&r.sub).saturating_mul(copies)
        }
        HirKind::Capture(c) => nfa_states_lower_bound(&c.sub),
        HirKind::Concat(hs) | HirKind::Alternation(hs) => hs
            .iter()
            .fold(0u128, |a, h| a.saturating_add(nfa_states_lower_bound(h))),
    }
}

/// Deepest nesting of unescaped parentheses in a regex's text: an upper
/// bound on its group nesting (brackets inside classes count too), checked
/// against `regex-syntax`'s nesting limit (250, which also counts
/// repetitions and alternations) by code that writes regexes.
pub fn regex_nesting(re: &str) -> usize {
    let (mut depth, mut max, mut escaped) = (0usize, 0usize, false);
    for c in re.bytes() {
        match c {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'(' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}
