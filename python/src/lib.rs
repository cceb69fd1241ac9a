//! # zapspec's Python package (`zapspec._zapspec`)
//!
//! The extension module behind the `zapspec` Python package: zapspec's
//! Earley engine (`zapspec-earley`), JSON Schema compiler
//! (`zapspec-jsonschema`), GBNF parser (`zapspec-grammar`) and tokenizer
//! loaders (`zapspec-vocab`) behind XGrammar's Python interface, so that a
//! serving engine swaps backends by changing an import.
//!
//! | module | Python | what |
//! |---|---|---|
//! | `tokenizer` | `TokenizerInfo` | a tokenizer's token bytes, stop tokens, the model's vocabulary size |
//! | `grammar` | `Grammar` | JSON Schema / GBNF / regex / builtin JSON / structural tag → grammar IR, keyed for the cache; the model families' tool-call formats (`zapspec.builtin_structural_tag`) |
//! | `compiler` | `GrammarCompiler`, `CompiledGrammar` | one engine per compiler (token trie, mask caches), compiled grammars cached by source |
//! | `matcher` | `GrammarMatcher`, `batch_fill_next_token_bitmask` | one sequence's parser state; the batch fill on a thread pool |
//! | `bitmask` | — | the int32 bitmask layout and array checks |
//! | `errors` | `zapspec.errors` | Rust errors as the package's exceptions; panics as `InternalError` |
//!
//! Costs on top of the engine: a bitmask fill converts the engine's 64-bit
//! mask words into the row in one pass (a state-cache hit is lent, not
//! copied: `EarleyMatcher::with_mask`); every call that can take long
//! (compiling, filling, validating a draft) releases the GIL. The Python
//! side (`python/zapspec/`) adds `allocate_token_bitmask`,
//! `apply_token_bitmask_inplace` (numpy and torch) and the logits
//! processors of `zapspec.contrib`.

use pyo3::prelude::*;

mod bitmask;
mod compiler;
mod errors;
mod grammar;
mod matcher;
mod phi;
mod tokenizer;

/// The extension module.
#[pymodule]
fn _zapspec(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tokenizer::TokenizerInfo>()?;
    m.add_class::<grammar::Grammar>()?;
    m.add_class::<compiler::GrammarCompiler>()?;
    m.add_class::<compiler::CompiledGrammar>()?;
    m.add_class::<matcher::GrammarMatcher>()?;
    m.add_function(wrap_pyfunction!(matcher::batch_fill_next_token_bitmask, m)?)?;
    m.add_function(wrap_pyfunction!(matcher::_apply_token_bitmask_f32, m)?)?;
    m.add_function(wrap_pyfunction!(grammar::_builtin_families_json, m)?)?;
    m.add_function(wrap_pyfunction!(grammar::_builtin_structural_tag_json, m)?)?;
    m.add_function(wrap_pyfunction!(grammar::_builtin_check_family, m)?)?;
    m.add_function(wrap_pyfunction!(grammar::_regex_to_gbnf, m)?)?;
    m.add_function(wrap_pyfunction!(grammar::_allow_empty_rule_ids, m)?)?;
    m.add_function(wrap_pyfunction!(grammar::_number_range_regex, m)?)?;
    m.add_function(wrap_pyfunction!(tokenizer::get_serialization_version, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
