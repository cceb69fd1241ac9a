//! Compilation entry points: the per-vocabulary [`VocabIndex`] (token trie
//! and the shared terminal / context-independent cache), [`Engine`] and
//! [`CompiledGrammar`].
//!
//! What is *per process* (built once per vocabulary, excluded from
//! time-to-first-mask): [`VocabIndex::new`] — sorting the vocabulary and
//! building the token trie. What is *per grammar* (included in TTFM):
//! [`Engine::compile`] — terminal fusion, DFA compilation of the grammar's
//! terminals (unless another grammar over the same index already compiled
//! the same terminal), rule flattening, the initial Earley set — and the
//! first `fill_mask`, which computes the context-independent entries of the
//! (terminal, DFA state) pairs it meets (again shared with earlier grammars
//! that met the same pairs).
//!
//! | file | what |
//! |---|---|
//! | `index` | [`VocabIndex`]: fields, [`IndexConfig`], construction, accessors |
//! | `terminals` | the terminal cache: automata by regex text, [`TerminalTokens`] |
//! | `cache` | clock, byte account, eviction sweeps, releases, [`CacheStats`], `TermEntry::ci` |
//! | `ring` | the eviction ring, the evicted set, the byte sizes of hash tables |
//! | `compiled` | [`Engine`], [`CompiledGrammar`], the compile-time budget, [`Counters`] |

use std::sync::Arc;

use zapspec_core::Vocabulary;

mod cache;
mod compiled;
mod index;
mod ring;
mod terminals;
#[cfg(test)]
mod tests;

pub use cache::CacheStats;
pub(crate) use compiled::TerminalTrouble;
pub use compiled::{CompiledGrammar, Counters, Engine};
pub use index::{IndexConfig, VocabIndex};
pub use terminals::TerminalTokens;

/// The vocabulary as the engine keeps it: any [`Vocabulary`], shared.
///
/// A trait object rather than a type parameter: the engine reads token
/// bytes through its token trie when it computes masks, and asks the
/// vocabulary only for the bytes, length, EOS and special flag of the one
/// token being [advanced](zapspec_core::Constraint::advance) (a handful of
/// indirect calls per token). Building the trie and the slices, which
/// read every token, is generic over the concrete vocabulary
/// ([`VocabIndex::with_config`]).
pub type SharedVocab = Arc<dyn Vocabulary + Send + Sync>;
