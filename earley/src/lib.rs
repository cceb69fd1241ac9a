//! # zapspec-earley — grammar-constrained token masks over any vocabulary
//!
//! An Earley engine over **bytes** that computes, for a context-free
//! grammar (any CFG: left recursion, ambiguity, nullable rules) and an LLM
//! vocabulary, the set of tokens that extend the text so far to a viable
//! prefix of the language, with the optimisations of *Earley-Driven Dynamic
//! Pruning for Efficient Structured Decoding* (ZapFormat; Sun et al., ICML
//! 2025, `papers/000_*`). Use it to constrain sampling to a grammar — GBNF
//! or JSON Schema, compiled by `zapspec-grammar` — token by token.
//!
//! The crate's modules (its token trie is the `zapspec-toktrie` crate; the
//! eager and lazy constructions of its terminal DFAs are `zapspec-grammar`'s
//! `dense` and `lazy` modules):
//!
//! | module | paper | what |
//! |---|---|---|
//! | `error` | — | [`EarleyError`]: typed compile and matcher errors |
//! | [`terminal`] | §4.1 | terminals as byte DFAs ([`ByteDfa`]): dense (`zapspec-grammar`'s eager builder and layout), lazy (its `lazy` tables), counted or bounded layouts beside them |
//! | [`counted`] | — (llguidance's counted lexemes, in spirit) | `P X{m,n} S` with a prefix-free unit as a counter times `X`'s DFA, transitions computed from the layout (no table of `n` copies); states no token can tell apart share one cache entry |
//! | `bounded`, `intersect` | — (llguidance's lexeme intersections, in spirit) | an intersection terminal `A ∩ P X{m,n} S` (a JSON string's `pattern` under `maxLength`) as the pairs of `A`'s states and the repetition's count-free skeleton times a counter: per pair the lengths to acceptance (a 64-bit set below 64 and the least one above), so liveness is exact for every count without `|A| · n` states; a slice check far from the bounds steps pairs only |
//! | `compile` | — | regex → [`ByteDfa`]: the entry points that pick the construction (counted, lazy, eager), intersections, deferred terminals ([`Facts`]) |
//! | [`family`] | — (Chomsky–Miller: right-linear grammars are regular) | regular families: nonterminals recurring through one another only in last position (an automaton's grammar), and large acyclic automata over letters (a `pattern` times a length bound, a trie of excluded keys), become one lazily determinised terminal, built with `regex-automata`'s NFA builder |
//! | `walk` | — | a terminal's DFA walked over the token trie: which tokens keep it live from a state |
//! | [`slicer`] | — (llguidance's slicer) | vocabulary slices: precomputed token sets (and tiers of their shorter tokens) that make a cold cache entry for a JSON-string state a walk of ~5k tokens instead of 200k |
//! | `ci_cache` | §4.3 | context-independent token mask cache per (terminal, DFA state), shared across matchers and grammars, and between terminal states with the same residual automaton |
//! | `grammar` | §3.1 | rules flattened into dotted positions; the typed symbol after a dot |
//! | `chart` | §3.2, §4.2.1 | extended Earley items `(A → α • β, i, j)` with the DFA state of a terminal in progress; SCAN / COMPLETE / PREDICT with the Aycock–Horspool nullable fix |
//! | `prune` | §4.2.2–4.2.3 | the *compact* step: keep only items from which an item of the last set is reachable in the dependency graph, drop completed items once their set is processed, drop unreferenced sets |
//! | [`fuse`] | §4.5 (in spirit) | terminal fusion: regular, lexeme-sized nonterminals (and sets of literals of any size: an `enum`) become one DFA terminal |
//! | `config` | Table 3 | [`EngineConfig`]: each optimisation switchable (the ablation), resource limits |
//! | `engine` | §4.3, §5.2 | [`VocabIndex`] (token trie, slices, the shared terminal and entry cache with its byte account and eviction), [`Engine`], [`CompiledGrammar`] |
//! | `matcher` | §4.4, §5.2 | the [`EarleyMatcher`]; rejected-prefix set; pruned-state mask cache |
//! | [`batch`] | — (XGrammar's batch matcher) | [`fill_masks`]: the masks of a batch of sequences in parallel (rayon), the grammar shared by `Arc` |
//! | [`draft_tree`] | — (XGrammar's draft-tree traversal) | [`draft_tree_masks`]: the mask at every node of a speculative draft tree in one call |
//!
//! ## Entry points
//!
//! - [`VocabIndex::new`] (or [`Engine::new`], which wraps it): the
//!   per-vocabulary index — the token trie, the vocabulary slices and the
//!   cache of compiled terminals shared by every grammar compiled against
//!   it. Takes any [`Vocabulary`](zapspec_core::Vocabulary) behind an `Arc`
//!   (kept as a [`SharedVocab`]; real tokenizers are loaded by
//!   `zapspec-vocab`). Once per process and vocabulary.
//! - [`Engine::compile`]: a grammar compiled for that vocabulary, a
//!   [`CompiledGrammar`], which holds the pruned-state mask cache and the
//!   rejected-prefix set shared by all its matchers. Once per grammar.
//! - [`CompiledGrammar::matcher`]: an [`EarleyMatcher`], the parser state
//!   of one sequence: token masks, advance, rollback, fork (`Clone`),
//!   through the `zapspec_core` constraint traits. One per sequence.
//! - [`fill_masks`]: the masks of a batch of matchers (one per running
//!   sequence) in parallel, for serving; [`draft_tree_masks`]: the masks at
//!   every node of a tree of drafted tokens, for tree speculative decoding.
//!
//! `VocabIndex`, `Engine`, `CompiledGrammar` and `EarleyMatcher` are
//! `Send + Sync` (checked at compile time in [`batch`]): share the
//! compiled grammar by `Arc` across a server's threads, and mask or
//! advance each matcher on any thread.
//!
//! ```no_run
//! use std::sync::Arc;
//! use zapspec_earley::{Engine, EngineConfig};
//! use zapspec_core::Constraint;
//! use zapspec_vocab::{TokenVocab, TiktokenBpe};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let vocab = Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k)?);
//! let engine = Engine::new(vocab);                    // once per process (token trie)
//! # let grammar = zapspec_grammar::Grammar::new();
//! let compiled = engine.compile(&grammar, EngineConfig::default())?; // per grammar
//! let mut m = compiled.matcher();
//! let mask = m.mask();
//! # Ok(()) }
//! ```
//!
//! [`EngineConfig`] switches each optimisation off (the ablation of
//! ZapFormat Table 3); [`IndexConfig`] does the same for the slices and
//! residual sharing of the index.
//!
//! ## Costs
//!
//! With `|V|` tokens, `N` trie nodes (421k for o200k) and `W = |V|/64`
//! words of a [`TokenSet`](zapspec_core::TokenSet):
//!
//! - **Index** ([`VocabIndex::new`]): sorting the token strings and
//!   building the trie, O(Σ|token| + |V| log |V|), plus one trie walk per
//!   slice. Excluded from time to first mask (TTFM).
//! - **Compile** ([`Engine::compile`]): terminal fusion (fused terminals
//!   get their HIR from their parts', [`fuse::Fused::hir`]: no regex text
//!   is parsed), one cache entry per distinct terminal (shared with earlier
//!   grammars over the same index). A terminal without look-around, not a
//!   counted repetition and of a modest NFA gets no automaton yet: its
//!   start state and nullability are read off its HIR, and its Thompson
//!   NFA is built by the first mask or step that reaches it
//!   ([`IndexConfig::deferred_terminals`]; a grammar pays for the
//!   terminals its parses reach, [`CompiledGrammar::terminals_built`]
//!   counts them), its DFA states later still, one by one (module
//!   `zapspec_grammar::lazy`, [`IndexConfig::lazy_dfas`]). Counted
//!   repetitions, regular families and regexes with look-around are built
//!   at once (a huge fused terminal can dominate, see
//!   [`fuse::MAX_FUSED_WEIGHT`]). Then rule flattening and the initial
//!   Earley set. TTFM is this plus the first mask (which builds the
//!   terminals a parse can start with); a benchmark of cold TTFM needs a
//!   fresh [`VocabIndex`] per grammar (the trie can be shared by cloning
//!   the vocabulary `Arc`).
//! - **Mask** (`fill_mask`): a pruned-state cache hit copies `W` words.
//!   Otherwise, per distinct (terminal, DFA state) pair among the items of
//!   the last Earley set, one OR of its context-independent set (O(W), or
//!   its non-zero words) and a walk of its remainder trie of
//!   context-dependent tokens with the byte-level parser. The first use of
//!   a pair anywhere in the process computes its entry: one walk of the
//!   token trie (O(N)), or of the few thousand tokens outside a slice;
//!   with lazy terminal DFAs, that walk also builds the DFA states the
//!   tokens reach (a subset-construction step each, about a microsecond),
//!   and the first use of a deferred terminal builds its NFA (tens of
//!   microseconds; a `format` such as `uri`, about a millisecond).
//!   Counted repetitions ([`counted`]) cost no table: a transition is a
//!   shift, a mask and one row lookup; regular families ([`family`]) are
//!   one terminal, so a token inside a key region is one cache lookup
//!   instead of a byte-level parse.
//! - **Masks over ~1 ms**: a cold entry on a 200k vocabulary (a trie
//!   walk, 1–5 ms; each pair once per process while the cache holds it);
//!   a state whose items hold many distinct cold pairs at once (a value
//!   that may be any of several strings with different formats, or the
//!   first mask after an object opens with dozens of keys); and grammars
//!   whose regular parts neither fusion nor families absorb (a region or
//!   family over [`family::MAX_FAMILY_MEMBERS`] members, such as a
//!   `format` times a length bound written as ten thousand states), where
//!   tokens crossing terminal boundaries are parsed byte by byte through
//!   the chart. A string longer than one counted terminal (the JSON Schema
//!   compiler's `max_regex_repeat`: 1,024 characters by default, for
//!   consumers that expand repetitions; `EARLEY_MAX_REGEX_REPEAT` for this
//!   engine, which builds any count in constant space) is a chain of
//!   blocks: the few masks within a token's length of a block boundary
//!   walk most of the vocabulary through the chart (10–30 ms on o200k),
//!   once per boundary the text crosses.
//! - **Advance**: Earley work for the token's bytes over the pruned chart
//!   (SCAN / COMPLETE / PREDICT per byte), then compaction in time
//!   proportional to the retained items; the matcher keeps one chart
//!   snapshot per token, sharing sets through `Arc`.
//! - **Rollback** pops snapshots; **fork** clones a vector of `Arc`s.
//!
//! The shared cache of compiled terminals and their entries is bounded by
//! [`IndexConfig::max_cache_bytes`], counted exactly (each entry and
//! terminal adds its bytes when stored and takes them back when dropped:
//! its allocation, tables, key and per-state slots; the index's own maps,
//! terminal ring and ghost list are charged as they grow and shrink, so
//! the live heap the index keeps across grammars is what it counts):
//! when a cold entry or a compile takes it over, a sweep evicts entries not
//! used since their terminal's previous visit (a CLOCK approximation of
//! least recently used) and terminals no live grammar holds, until the
//! cache is at three quarters of the bound; evicted entries are recomputed
//! if used again. A sweep visits at most [`VocabIndex::SWEEP_SLOTS`] slots
//! of the terminals (after one pass over the map of entries shared by
//! residual key) and runs inline: no pass over the whole cache lands in
//! one mask, and no thread is started. A terminal that only one grammar looked up leaves
//! the cache when that grammar is dropped (a schema's own keys and
//! patterns are rarely met again); its hash is remembered, so one compiled
//! again stays. The terminals of live grammars are pinned but counted;
//! the pruned-state cache of each grammar is bounded by
//! [`EngineConfig::state_cache_capacity`] masks and
//! [`EngineConfig::state_cache_bytes`]; matchers report their chart
//! size with [`EarleyMatcher::memory`].
//!
//! ## Limits
//!
//! Every resource a hostile grammar or input can blow up has a bound in
//! [`EngineConfig`], and exceeding it is [`EarleyError::LimitExceeded`]
//! naming the `zapspec_grammar::Limit` and the place: each terminal's NFA,
//! DFA and DFA states (`regex_limits`; a lazy DFA's state bound is met at
//! the mask or step that needs a state past it, and reported there by
//! [`EarleyMatcher::limit_exceeded`], the work since not cached; a
//! terminal is deferred only when an estimate of its NFA is far below
//! `nfa_bytes`, so its NFA bound is met at compile time, and should a
//! deferred build still fail, it is reported the same way), the
//! items of one Earley set
//! (`max_set_items`; checked by [`EarleyMatcher::try_advance`] and
//! [`EarleyMatcher::try_mask`], and at compile time for the initial set)
//! and the compile's wall clock (`compile_time_budget`). The table of
//! defaults is in `zapspec_grammar::limits`.
//!
//! ## Design: a scannerless Earley parser with DFA terminals
//!
//! We parse bytes directly: an item whose postdot symbol is a terminal
//! carries that terminal's DFA state, and SCAN moves it to the next set with
//! the DFA's next state (an accepting state also completes the terminal in
//! that set). We chose this over a separate lexer feeding lexemes to Earley
//! (llguidance's design) because (1) it needs no lexer conflict resolution —
//! every terminal boundary the grammar allows is explored, so the mask is
//! exactly the set of tokens that extend a viable prefix; (2) ZapFormat's
//! extended items and dependency graph are defined on exactly these items;
//! and (3) the per-byte cost inside a terminal is what the
//! context-independent cache removes anyway. To give the cache lexeme-sized
//! terminals even for character-level grammars (GBNF), [`fuse`] compiles
//! regular sub-grammars into single regex terminals first.
//!
//! ## Computing a mask
//!
//! For the current (pruned) chart, the mask is the union, over every
//! distinct (terminal `T`, DFA state `s`) among the items of the last set,
//! of (a) the precomputed context-independent set of tokens that stay inside
//! `T`, and (b) the context-dependent tokens: those whose bytes can end `T`
//! before their last byte; their remainders form a small trie walked by the
//! byte-level parser from the set where `T` has just been completed, with
//! push/pop per byte so a shared remainder prefix is parsed once. The
//! context-dependent walks run after every context-independent set is in,
//! and skip remainder subtrees whose tokens are all already allowed. EOS is
//! added exactly when the start symbol has been completed over the whole
//! input; special tokens are never allowed otherwise. With the pruned-state
//! cache, identical pruned charts (canonical: sorted items, origins
//! renumbered by set rank) reuse the mask.
//!
//! Cold entries are made cheap by [`slicer`] (a state containing the JSON
//! string body takes the slice's token set and walks only the tokens
//! outside it) and by residual sharing ([`ByteDfa::residual_key`]: states
//! with the same residual automaton, such as the string interiors of many
//! key and value terminals, share one entry); the remainder trie of an
//! entry is merged from the token trie's subtrees.
//!
//! Measurement history (past MaskBench tables, before/after figures of the
//! optimisations) is in `examples/results/history/earley.md`.
//!
//! ## Not done / limits
//!
//! - The compact step recomputes needs over the *retained* chart at each
//!   token (cost ∝ pruned state size, never touching pruned items), rather
//!   than maintaining reference counts edge by edge; the dependency graph is
//!   implicit in the items' origins, not stored as explicit edges.
//! - Compaction runs once per token (after all its bytes), not after every
//!   byte's Earley set; the retained state is the same.
//! - The rejected-prefix set is consulted by `advance` (per parser-state
//!   fingerprint), not inside the mask walk, where the trie's subtree skip
//!   already rejects every extension of a failing prefix.
//! - Rollback and fork keep one chart snapshot per token (sharing sets by
//!   `Arc`), not an undo log.
//! - The context-independent walk is not SIMD/bit-parallel. Cold entries
//!   that no slice tier covers (restricted character classes such as
//!   formats and patterns, the first character of a pattern that cannot
//!   start with a space, single-character terminals followed by anything)
//!   still walk the whole trie, and a single-character terminal whose
//!   every continuation is context-dependent builds a remainder trie of
//!   most of the vocabulary (once per process).
//! - TTFM's tail: a bounded repetition that neither the counted
//!   construction nor an intersection terminal takes (under an
//!   alternation, or after a non-literal prefix, such as the region "keys
//!   no `patternProperties` pattern `^.{1,255}$` matches", written by the
//!   JSON Schema compiler as one regex with `{0,253}` inside) is expanded
//!   `n` times in the NFA, lazy or not, and regexes with look-around are
//!   determinised at compile time. An intersection whose second regex is
//!   not a counted repetition of a prefix-free unit, or whose lower bound
//!   is over 63, is built as an eager product (bounded by `dfa_states`).
//! - The masks over ~5 ms on MaskBench are first masks of a state whose
//!   slice search builds many lazy states: an unanchored pattern (a string
//!   that must *contain* one of several alternatives) keeps, after a match,
//!   the progress of every other alternative in its state sets, which the
//!   subset construction does not minimise away; the first mask inside a
//!   key region or a string with a word-count pattern is the next tier
//!   (2–5 ms: the search and the walk of the tokens outside the tier).

mod avoid_text;
pub mod batch;
mod bounded;
mod chart;
mod ci_cache;
mod compile;
mod config;
pub mod counted;
pub mod draft_tree;
mod engine;
mod error;
pub mod family;
pub mod fuse;
mod grammar;
mod intersect;
mod matcher;
mod prune;
pub mod slicer;
pub mod terminal;
mod walk;

pub use batch::{fill_masks, fill_masks_with, BatchConfig, BatchError};
pub use compile::Facts;
pub use config::EngineConfig;
pub use draft_tree::{draft_tree_masks, DraftTree, DraftTreeError, DraftTreeMasks, NodeMask};
pub use engine::{
    CacheStats, CompiledGrammar, Counters, Engine, IndexConfig, SharedVocab, TerminalTokens,
    VocabIndex,
};
pub use error::EarleyError;
pub use matcher::{EarleyMatcher, MemStats};
pub use slicer::{Slice, SliceSpec, Tier};
pub use terminal::ByteDfa;
