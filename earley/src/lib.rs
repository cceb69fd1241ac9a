//! # earley — ZapFormat / Formatron token masks over a real vocabulary
//!
//! An Earley engine over **bytes** that computes the allowed-token mask of a
//! context-free grammar (any CFG: left recursion, ambiguity, nullable rules)
//! for an LLM vocabulary, with the optimisations of *Earley-Driven Dynamic
//! Pruning for Efficient Structured Decoding* (Sun et al., ICML 2025,
//! `papers/000_*`):
//!
//! | module | paper | what |
//! |---|---|---|
//! | [`chart`](crate) | §3.2, §4.2.1 | extended Earley items `(A → α • β, i, j)` with the DFA state of a terminal in progress; SCAN / COMPLETE / PREDICT with the Aycock–Horspool nullable fix |
//! | [`prune`](crate) | §4.2.2–4.2.3 | the *compact* step: keep only items from which an item of the last set is reachable in the dependency graph, drop completed items once their set is processed, drop unreferenced sets |
//! | [`ci_cache`](crate) | §4.3 | context-independent token mask cache per (terminal, DFA state), shared across matchers and grammars, and between terminal states with the same residual automaton |
//! | [`slicer`] | — (llguidance's slicer) | vocabulary slices: precomputed token sets that make a cold cache entry for a JSON-string state a walk of ~5k tokens instead of 200k |
//! | [`matcher`](crate) | §4.4, §5.2 | the [`EarleyMatcher`] `Constraint`; rejected-prefix set; pruned-state mask cache |
//! | [`fuse`] | §4.5 (in spirit) | terminal fusion: regular, lexeme-sized nonterminals become one DFA terminal |
//! | [`toktrie`](crate) | — | the vocabulary as a preorder byte trie with subtree skips |
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
//! push/pop per byte so a shared remainder prefix is parsed once. EOS is
//! added exactly when the start symbol has been completed over the whole
//! input; special tokens are never allowed otherwise. With the pruned-state
//! cache, identical pruned charts (canonical: sorted items, origins
//! renumbered by set rank) reuse the mask.
//!
//! ## Entry points
//!
//! ```no_run
//! use std::sync::Arc;
//! use zapspec_earley::{Engine, EngineConfig};
//! use zapspec_core::{Constraint};
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
//! **TTFM** (time to first mask) covers [`Engine::compile`] plus the first
//! `fill_mask`. It excludes [`Engine::new`] / [`VocabIndex::new`] (loading
//! and sorting the vocabulary, building the token trie: once per process
//! and vocabulary). Terminals and their context-independent entries already
//! computed for *another* grammar over the same index are reused; a
//! benchmark measuring cold TTFM must use a fresh [`VocabIndex`] per
//! grammar (the trie can be shared by cloning the vocabulary `Arc`).
//!
//! ## Measured (MaskBench sample, o200k)
//!
//! `cargo run -p zapspec-earley --profile release-fast --example tbm -- 100 1 full,nopruning,nostate,nofuse`
//! (100 seeded schemas of `data/maskbench`, 134 valid instances, 7005
//! tokens, every token checked against the mask and advanced, EOS checked
//! at the end; shared 2-core machine under heavy load, wall clock):
//!
//! | config | TBM p50 µs | p90 | p99 | max | TTFM p50 ms | rejected valid tokens | peak items (mean) |
//! |---|---|---|---|---|---|---|---|
//! | full | 1.7 | 19.9 | 6771 | 18443 | 0.91 | 0 | 12.8 |
//! | no pruning | 6.8 | 28.5 | 7343 | 14561 | 0.93 | 0 | 286.8 |
//! | no state cache | 1.8 | 12.8 | 7346 | 14517 | 0.93 | 0 | 12.8 |
//! | no fusion | 1.5 | 13.4 | 6724 | 197444 | 0.81 | 0 | 15.0 |
//!
//! (That table predates the slices.) The tail was the first use of a
//! (terminal, DFA state) pair: one walk of the 421k-node o200k trie with the
//! terminal's DFA, ≈3 ms, and on JSON Schema grammars almost always for a
//! state inside a string. Three changes cut it (measured side by side with
//! `--example tbm -- 100 1 full,noslice,noshare,plainindex` and
//! `--example ci_cost`):
//!
//! - [`slicer`]: for a state that contains the JSON string body, the
//!   ~195k tokens of the slice are taken from a precomputed set and only the
//!   ~5k others are walked (2.6–7.4 ms → 0.13–0.26 ms per cold entry);
//! - residual sharing ([`ByteDfa::residual_key`]): the string-interior
//!   states of the many key/value terminals of different schemas have the
//!   same residual automaton and share one entry;
//! - the remainder trie of context-dependent tokens is merged from the
//!   token trie's subtrees instead of sorting remainder strings (17 → 4 ms
//!   for `[ \t\n\r]*`, whose 107k dependent tokens start with a space).
//!
//! The context-dependent walks run after every context-independent set of
//! the mask is in, and skip remainder subtrees whose tokens are all already
//! allowed. MaskBench figures against llguidance and kbnf, and the
//! ablation with peak live items, are in `examples/results/`.
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
//!   that no slice covers (restricted character classes such as formats and
//!   patterns, single-character terminals followed by anything) still walk
//!   the whole trie (1–5 ms), and a single-character terminal whose every
//!   continuation is context-dependent builds a remainder trie of ~190k
//!   tokens (≈20 ms once per process).
//! - Huge fused terminals (tens of thousands of DFA states, from bounded
//!   repetitions) make TTFM's tail: DFA construction is in TTFM.

mod chart;
mod ci_cache;
mod config;
mod engine;
mod error;
pub mod fuse;
mod grammar;
mod matcher;
mod prune;
pub mod slicer;
pub mod terminal;
mod toktrie;

pub use ci_cache::{CiEntry, TermEntry};
pub use config::EngineConfig;
pub use engine::{CacheStats, CompiledGrammar, Counters, Engine, IndexConfig, VocabIndex};
pub use error::EarleyError;
pub use matcher::{EarleyMatcher, MemStats};
pub use slicer::Slice;
pub use terminal::{ByteDfa, DEAD};
pub use toktrie::TokTrie;
