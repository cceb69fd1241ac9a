//! `GrammarCompiler` and `CompiledGrammar`: one engine (token trie, mask
//! caches) per compiler, shared by every grammar it compiles; compiled
//! grammars cached by their source text and options.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{earley_error, guard, kind, raise};
use crate::grammar::{compile_schema, schema_options, schema_value, Grammar, GrammarInner};
use crate::tokenizer::{check_serialized, TokInner, TokenizerInfo, SERIALIZATION_VERSION};
use zapspec_earley::{
    CompiledGrammar as EarleyGrammar, Engine, EngineConfig, IndexConfig, VocabIndex,
};

/// A grammar compiled for one tokenizer.
#[derive(Debug)]
pub(crate) struct CompiledInner {
    /// The engine's compiled grammar (pruned-state cache, rejected
    /// prefixes; its matchers share them).
    pub g: Arc<EarleyGrammar>,
    /// The tokenizer it was compiled for.
    pub tok: Arc<TokInner>,
    /// The grammar it was compiled from.
    pub grammar: Arc<GrammarInner>,
    /// Estimated bytes (what the compiler's cache counts).
    pub bytes: usize,
}

/// A grammar compiled for a tokenizer: immutable, shared by any number of
/// `GrammarMatcher`s on any threads.
#[pyclass(frozen, module = "zapspec")]
pub struct CompiledGrammar {
    pub(crate) inner: Arc<CompiledInner>,
}

#[pymethods]
impl CompiledGrammar {
    /// The grammar this was compiled from.
    #[getter]
    fn grammar(&self) -> Grammar {
        Grammar {
            inner: self.inner.grammar.clone(),
        }
    }

    /// The tokenizer this was compiled for.
    #[getter]
    fn tokenizer_info(&self) -> TokenizerInfo {
        TokenizerInfo {
            inner: self.inner.tok.clone(),
        }
    }

    /// An estimate of the memory the compiled grammar holds apart from
    /// the engine's shared caches (its rules and its source text).
    #[getter]
    fn memory_size_bytes(&self) -> usize {
        self.inner.bytes
    }

    /// This compiled grammar as JSON: its grammar (`Grammar.serialize_json`)
    /// and its tokenizer's metadata. The engine's caches are not written:
    /// `deserialize_json` compiles the grammar again for the tokenizer
    /// info it is given (the same masks; the time of one compile).
    fn serialize_json(&self) -> String {
        let g = Grammar {
            inner: self.inner.grammar.clone(),
        };
        let t = TokenizerInfo {
            inner: self.inner.tok.clone(),
        };
        serde_json::json!({
            "__VERSION__": SERIALIZATION_VERSION,
            "kind": "CompiledGrammar",
            "grammar": g.to_json(),
            "tokenizer_metadata": t.metadata_json(),
        })
        .to_string()
    }

    /// A compiled grammar from `serialize_json`'s text, for
    /// `tokenizer_info` (compiled again; see `serialize_json`).
    #[staticmethod]
    fn deserialize_json(
        py: Python<'_>,
        json_str: &str,
        tokenizer_info: &TokenizerInfo,
    ) -> PyResult<CompiledGrammar> {
        guard(|| {
            let v = check_serialized(py, json_str, "CompiledGrammar")?;
            let gv = v.get("grammar").ok_or_else(|| {
                raise(
                    py,
                    "DeserializeFormatError",
                    "serialized CompiledGrammar: no \"grammar\"",
                    kind("format"),
                )
            })?;
            let grammar = Grammar::from_json(py, gv)?;
            let tok = tokenizer_info.inner.clone();
            let vocab = tok.vocab.clone();
            let index = py
                .detach(|| VocabIndex::with_config(vocab, IndexConfig::default()))
                .map_err(|e| earley_error(py, &e))?;
            let engine = Engine::with_index(index);
            let g = py
                .detach(|| engine.compile(&grammar.ir, EngineConfig::default()))
                .map_err(|e| earley_error(py, &e))?;
            let (terminals, positions) = g.size();
            let bytes = grammar.key.len() + 48 * positions + 512 * terminals;
            Ok(CompiledGrammar {
                inner: Arc::new(CompiledInner {
                    g,
                    tok,
                    grammar,
                    bytes,
                }),
            })
        })
    }

    fn __repr__(&self) -> String {
        let (terminals, positions) = self.inner.g.size();
        format!("CompiledGrammar(terminals={terminals}, positions={positions})")
    }
}

/// Cached compiled grammars, least recently used first out.
#[derive(Default)]
struct Cache {
    map: HashMap<String, (Arc<CompiledInner>, u64)>,
    tick: u64,
    bytes: usize,
}

impl Cache {
    fn get(&mut self, key: &str) -> Option<Arc<CompiledInner>> {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(key).map(|(c, t)| {
            *t = tick;
            c.clone()
        })
    }

    fn insert(&mut self, key: String, c: Arc<CompiledInner>, limit: Option<usize>) {
        self.tick += 1;
        self.bytes += c.bytes;
        if let Some((old, _)) = self.map.insert(key, (c, self.tick)) {
            self.bytes -= old.bytes;
        }
        if let Some(limit) = limit {
            while self.bytes > limit && self.map.len() > 1 {
                // O(entries) per eviction: caches hold hundreds of grammars
                let Some(oldest) = self
                    .map
                    .iter()
                    .min_by_key(|(_, (_, t))| *t)
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                if let Some((c, _)) = self.map.remove(&oldest) {
                    self.bytes -= c.bytes;
                }
            }
        }
    }
}

/// Compiles grammars for one tokenizer. Holds the engine's per-vocabulary
/// index (the token trie, the vocabulary slices, the bounded cache of
/// terminal automata and context-independent masks) that every grammar it
/// compiles shares, and a cache of compiled grammars keyed by their
/// source text and options. Compiling releases the GIL; at most
/// `max_threads` compilations run at once (one compilation is one thread).
#[pyclass(frozen, module = "zapspec")]
pub struct GrammarCompiler {
    tok: Arc<TokInner>,
    engine: Engine,
    config: EngineConfig,
    cache: Mutex<Cache>,
    cache_enabled: bool,
    limit: Option<usize>,
    running: Mutex<usize>,
    freed: Condvar,
    max_threads: usize,
}

impl GrammarCompiler {
    /// The compiled grammar of `key`, from the cache or built by `build`
    /// (with the GIL released, inside a compile slot).
    fn compile_with(
        &self,
        py: Python<'_>,
        key: String,
        build: impl FnOnce(Python<'_>) -> PyResult<Arc<GrammarInner>>,
    ) -> PyResult<CompiledGrammar> {
        if self.cache_enabled {
            if let Some(c) = lock(&self.cache).get(&key) {
                return Ok(CompiledGrammar { inner: c });
            }
        }
        let _slot = py.detach(|| Slot::take(&self.running, &self.freed, self.max_threads));
        let result: PyResult<Arc<CompiledInner>> = (|| {
            let grammar = build(py)?;
            let g = py
                .detach(|| self.engine.compile(&grammar.ir, self.config))
                .map_err(|e| earley_error(py, &e))?;
            let (terminals, positions) = g.size();
            let bytes = grammar.key.len() + 48 * positions + 512 * terminals;
            Ok(Arc::new(CompiledInner {
                g,
                tok: self.tok.clone(),
                grammar,
                bytes,
            }))
        })();
        let c = result?;
        if self.cache_enabled {
            lock(&self.cache).insert(key, c.clone(), self.limit);
        }
        Ok(CompiledGrammar { inner: c })
    }
}

/// One of a compiler's `max_threads` compile slots, given back when
/// dropped (also when the compile fails or panics).
struct Slot<'a> {
    running: &'a Mutex<usize>,
    freed: &'a Condvar,
}

impl<'a> Slot<'a> {
    /// Waits (the GIL released by the caller) until fewer than `max`
    /// compiles run, then counts this one.
    fn take(running: &'a Mutex<usize>, freed: &'a Condvar, max: usize) -> Self {
        let mut n = lock(running);
        while *n >= max {
            n = freed.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        Slot { running, freed }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *lock(self.running) -= 1;
        self.freed.notify_one();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[pymethods]
impl GrammarCompiler {
    /// A compiler for `tokenizer_info`. `max_threads`: compilations
    /// running at once; `cache_enabled` / `cache_limit_bytes` (-1: no
    /// bound): the cache of compiled grammars, bounded by their estimated
    /// size (`CompiledGrammar.memory_size_bytes`), least recently used out
    /// first; `index_cache_bytes`: the bound on the engine's shared cache
    /// of terminal automata and masks (default 32 MiB; evicted entries are
    /// recomputed when used again, masks are unchanged).
    #[new]
    #[pyo3(signature = (tokenizer_info, *, max_threads = 8, cache_enabled = true, cache_limit_bytes = -1, index_cache_bytes = None))]
    fn new(
        py: Python<'_>,
        tokenizer_info: &TokenizerInfo,
        max_threads: usize,
        cache_enabled: bool,
        cache_limit_bytes: i64,
        index_cache_bytes: Option<usize>,
    ) -> PyResult<Self> {
        guard(|| {
            if max_threads == 0 {
                return Err(raise(
                    py,
                    "GrammarError",
                    "max_threads must be at least 1",
                    kind("option"),
                ));
            }
            let tok = tokenizer_info.inner.clone();
            let mut ic = IndexConfig::default();
            if let Some(b) = index_cache_bytes {
                ic.max_cache_bytes = b;
            }
            let vocab = tok.vocab.clone();
            let index = py
                .detach(|| VocabIndex::with_config(vocab, ic))
                .map_err(|e| earley_error(py, &e))?;
            Ok(GrammarCompiler {
                tok,
                engine: Engine::with_index(index),
                config: EngineConfig::default(),
                cache: Mutex::new(Cache::default()),
                cache_enabled,
                limit: usize::try_from(cache_limit_bytes).ok(),
                running: Mutex::new(0),
                freed: Condvar::new(),
                max_threads,
            })
        })
    }

    /// `Grammar.from_json_schema(schema, **kwargs)` compiled (see there
    /// for the keywords); cached by the schema's canonical text and the
    /// options, so the schema compiler runs once per distinct schema.
    #[pyo3(signature = (schema, **kwargs))]
    fn compile_json_schema(
        &self,
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<CompiledGrammar> {
        guard(|| {
            let value = schema_value(py, schema)?;
            let (opts, okey) = schema_options(py, kwargs)?;
            let key = format!("json\u{0}{value}\u{0}{okey}");
            self.compile_with(py, key.clone(), move |py| {
                let ir = compile_schema(py, &value, &opts)?;
                Ok(GrammarInner::new(ir, key))
            })
        })
    }

    /// A `Grammar`, or GBNF text (with `root_rule_name`), compiled.
    #[pyo3(signature = (grammar, *, root_rule_name = "root"))]
    fn compile_grammar(
        &self,
        py: Python<'_>,
        grammar: &Bound<'_, PyAny>,
        root_rule_name: &str,
    ) -> PyResult<CompiledGrammar> {
        guard(|| {
            if let Ok(g) = grammar.cast::<Grammar>() {
                let inner = g.get().inner.clone();
                return self.compile_with(py, inner.key.clone(), move |_| Ok(inner));
            }
            let Ok(text) = grammar.extract::<String>() else {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "compile_grammar takes a zapspec.Grammar or GBNF text",
                ));
            };
            let g = Grammar::ebnf(py, &text, root_rule_name)?;
            self.compile_with(py, g.key.clone(), move |_| Ok(g))
        })
    }

    /// `Grammar.from_structural_tag(...)` compiled (the same arguments),
    /// cached by the tag's JSON text.
    #[pyo3(signature = (*args, **kwargs))]
    fn compile_structural_tag(
        &self,
        py: Python<'_>,
        args: &Bound<'_, pyo3::types::PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<CompiledGrammar> {
        guard(|| {
            let text = crate::grammar::structural_tag_text(py, args, kwargs)?;
            let value = crate::grammar::structural_tag_value(py, &text)?;
            let key = format!("stag\u{0}{value}");
            self.compile_with(py, key, move |py| Grammar::structural_tag_of(py, value))
        })
    }

    /// `Grammar.from_regex(regex)` compiled.
    fn compile_regex(&self, py: Python<'_>, regex: &str) -> PyResult<CompiledGrammar> {
        guard(|| {
            let g = Grammar::regex(py, regex)?;
            self.compile_with(py, g.key.clone(), move |_| Ok(g))
        })
    }

    /// `Grammar.from_lark(lark_string, named_grammars=…)` compiled.
    #[pyo3(signature = (lark_string, *, named_grammars = None))]
    fn compile_lark(
        &self,
        py: Python<'_>,
        lark_string: &str,
        named_grammars: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<CompiledGrammar> {
        guard(|| {
            let g = Grammar::lark(py, lark_string, named_grammars)?;
            self.compile_with(py, g.key.clone(), move |_| Ok(g))
        })
    }

    /// `Grammar.builtin_json_grammar()` compiled.
    fn compile_builtin_json_grammar(&self, py: Python<'_>) -> PyResult<CompiledGrammar> {
        guard(|| {
            let g = Grammar::ebnf(py, zapspec_grammar::JSON_CONTAINER_GBNF, "root")?;
            self.compile_with(py, g.key.clone(), move |_| Ok(g))
        })
    }

    /// Empties the cache of compiled grammars (matchers keep theirs).
    fn clear_cache(&self) {
        *lock(&self.cache) = Cache::default();
    }

    /// Estimated bytes of the cached compiled grammars.
    fn get_cache_size_bytes(&self) -> usize {
        lock(&self.cache).bytes
    }

    /// The bound on the cache (-1: none).
    #[getter]
    fn cache_limit_bytes(&self) -> i64 {
        self.limit.map_or(-1, |l| l as i64)
    }

    /// The tokenizer this compiler compiles for.
    #[getter]
    fn tokenizer_info(&self) -> TokenizerInfo {
        TokenizerInfo {
            inner: self.tok.clone(),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "GrammarCompiler(tokenizer={:?}, cached={}, max_threads={})",
            self.tok.vocab.name(),
            lock(&self.cache).map.len(),
            self.max_threads
        )
    }
}
