//! `TokenizerInfo`: the bytes of every token of a model's tokenizer, its
//! stop tokens, and the model's vocabulary size (which may be larger than
//! the tokenizer's: the padding ids are never allowed).

use std::path::Path;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use zapspec_core::{TokenId, Vocabulary};
use zapspec_vocab::{decode_token_text, TiktokenBpe, TokenText, TokenVocab};

use crate::errors::{guard, kind, raise, vocab_error};

/// Token strings that end a turn or a document in common chat models,
/// looked up (as special tokens) when no stop token is given.
const STOP_NAMES: &[&str] = &[
    "</s>",
    "<|endoftext|>",
    "<|im_end|>",
    "<|eot_id|>",
    "<|end|>",
    "<eos>",
    "<end_of_turn>",
    "<|end_of_text|>",
];

/// What every object built from a tokenizer shares.
#[derive(Debug)]
pub(crate) struct TokInner {
    /// The tokenizer's tokens (exact bytes, special flags, encoder).
    pub vocab: Arc<TokenVocab>,
    /// The model's vocabulary size: bitmask rows cover `0..vocab_size`.
    pub vocab_size: usize,
    /// Tokens that end generation once the grammar accepts.
    pub stop: Vec<TokenId>,
}

impl TokInner {
    fn new(
        py: Python<'_>,
        vocab: TokenVocab,
        vocab_size: Option<usize>,
        stop: Option<Vec<i64>>,
        extra_stop: &[TokenId],
    ) -> PyResult<Self> {
        let n = vocab.len();
        let vocab_size = vocab_size.unwrap_or(n);
        if vocab_size == 0 {
            return Err(raise(
                py,
                "TokenizerError",
                "vocab_size must be positive",
                kind("vocab size"),
            ));
        }
        let stop: Vec<TokenId> = match stop {
            Some(ids) => {
                let mut out = Vec::with_capacity(ids.len());
                for id in ids {
                    if id < 0 || id as usize >= vocab_size.max(n) {
                        return Err(raise(
                            py,
                            "TokenizerError",
                            format!(
                                "stop token id {id} is outside the vocabulary (size {vocab_size})"
                            ),
                            kind("stop token"),
                        ));
                    }
                    out.push(id as TokenId);
                }
                out
            }
            None => {
                let mut out = vec![vocab.eos()];
                out.extend_from_slice(extra_stop);
                out
            }
        };
        let mut stop = stop;
        stop.sort_unstable();
        stop.dedup();
        if stop.is_empty() {
            return Err(raise(
                py,
                "TokenizerError",
                "stop_token_ids must not be empty",
                kind("stop token"),
            ));
        }
        Ok(TokInner {
            vocab: Arc::new(vocab),
            vocab_size,
            stop,
        })
    }
}

/// Special tokens of `vocab` named like a common stop token.
fn detect_stops(vocab: &TokenVocab, names: impl Fn(&str) -> Option<TokenId>) -> Vec<TokenId> {
    STOP_NAMES
        .iter()
        .filter_map(|s| names(s))
        .filter(|&t| vocab.is_special(t))
        .collect()
}

/// The tokenizer of a model, as the grammar engine sees it: the exact bytes
/// of every token id, which ids stop generation, and the model's
/// vocabulary size. Build it once per model and share it.
#[pyclass(frozen, module = "zapspec")]
pub struct TokenizerInfo {
    pub(crate) inner: Arc<TokInner>,
}

fn token_text_kind(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<TokenText> {
    // XGrammar's VocabType: RAW = 0, BYTE_FALLBACK = 1, BYTE_LEVEL = 2
    // (an IntEnum, an int or its name).
    let name: String = if let Ok(i) = v.extract::<i64>() {
        match i {
            0 => "raw".into(),
            1 => "byte_fallback".into(),
            2 => "byte_level".into(),
            _ => String::new(),
        }
    } else if let Ok(n) = v.getattr("name").and_then(|n| n.extract::<String>()) {
        n
    } else {
        v.extract::<String>().unwrap_or_default()
    };
    match name.to_ascii_lowercase().as_str() {
        "raw" => Ok(TokenText::Raw),
        "byte_fallback" => Ok(TokenText::ByteFallback),
        "byte_level" => Ok(TokenText::ByteLevel),
        _ => Err(raise(
            py,
            "TokenizerError",
            format!("unknown vocab_type {v}: expected VocabType.RAW, BYTE_FALLBACK or BYTE_LEVEL"),
            kind("vocab type"),
        )),
    }
}

impl TokenizerInfo {
    /// A loaded vocabulary with the model's size and its stop tokens
    /// (`stop`, else EOS and `extra_stop`): what every constructor ends with.
    fn build(
        py: Python<'_>,
        vocab: TokenVocab,
        vocab_size: Option<usize>,
        stop: Option<Vec<i64>>,
        extra_stop: &[TokenId],
    ) -> PyResult<Self> {
        Ok(TokenizerInfo {
            inner: Arc::new(TokInner::new(py, vocab, vocab_size, stop, extra_stop)?),
        })
    }
}

#[pymethods]
impl TokenizerInfo {
    /// A tokenizer from its vocabulary as a list of token strings (or
    /// bytes), index = token id, written as `vocab_type` says (XGrammar's
    /// constructor). Empty entries and `special_token_ids` are special;
    /// the stop tokens default to the first of `</s>`, `<|endoftext|>`,
    /// `<|im_end|>`, `<|eot_id|>`, `<eos>` … that the vocabulary has.
    #[new]
    #[pyo3(signature = (encoded_vocab, vocab_type = None, *, vocab_size = None, stop_token_ids = None, special_token_ids = None))]
    fn new(
        py: Python<'_>,
        encoded_vocab: &Bound<'_, PyAny>,
        vocab_type: Option<&Bound<'_, PyAny>>,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<i64>>,
        special_token_ids: Option<Vec<i64>>,
    ) -> PyResult<Self> {
        guard(|| {
            let kind_ = match vocab_type {
                Some(v) => token_text_kind(py, v)?,
                None => TokenText::Raw,
            };
            let mut tokens: Vec<Vec<u8>> = Vec::new();
            let mut names: std::collections::HashMap<String, TokenId> = Default::default();
            for (i, item) in encoded_vocab.try_iter()?.enumerate() {
                let item = item?;
                let bytes = if let Ok(b) = item.cast::<PyBytes>() {
                    b.as_bytes().to_vec()
                } else if let Ok(s) = item.cast::<PyString>() {
                    let s: String = s.extract()?;
                    let s = s.as_str();
                    names.entry(s.to_string()).or_insert(i as TokenId);
                    decode_token_text(s, kind_).ok_or_else(|| {
                        raise(
                            py,
                            "TokenizerError",
                            format!(
                                "token {i} ({s:?}) has a character outside the byte-level alphabet"
                            ),
                            kind("format"),
                        )
                    })?
                } else {
                    return Err(raise(
                        py,
                        "TokenizerError",
                        format!("encoded_vocab[{i}] is neither str nor bytes"),
                        kind("format"),
                    ));
                };
                tokens.push(bytes);
            }
            if tokens.is_empty() {
                return Err(raise(
                    py,
                    "TokenizerError",
                    "encoded_vocab is empty",
                    kind("format"),
                ));
            }
            let n = tokens.len();
            let mut special: Vec<TokenId> = Vec::new();
            for id in special_token_ids.unwrap_or_default() {
                if id < 0 || id as usize >= n {
                    return Err(raise(
                        py,
                        "TokenizerError",
                        format!("special token id {id} is outside the vocabulary ({n} tokens)"),
                        kind("special token"),
                    ));
                }
                special.push(id as TokenId);
            }
            let stops: Vec<TokenId> = match &stop_token_ids {
                Some(ids) => ids
                    .iter()
                    .filter(|&&i| i >= 0 && (i as usize) < n)
                    .map(|&i| i as TokenId)
                    .collect(),
                None => STOP_NAMES
                    .iter()
                    .filter_map(|s| names.get(*s).copied())
                    .collect(),
            };
            let Some(&eos) = stops.first() else {
                return Err(raise(
                    py,
                    "TokenizerError",
                    format!(
                        "no stop token: give stop_token_ids (none of {STOP_NAMES:?} is in the vocabulary)"
                    ),
                    kind("no eos"),
                ));
            };
            // stop tokens are control tokens: never grammar text
            special.extend(stops.iter().copied());
            let vocab = TokenVocab::from_tokens("encoded_vocab", tokens, &special, eos)
                .map_err(|e| vocab_error(py, &e))?;
            let stop = stop_token_ids.or_else(|| Some(stops.iter().map(|&t| t as i64).collect()));
            Self::build(py, vocab, vocab_size, stop, &[])
        })
    }

    /// From a Hugging Face tokenizer object: a `transformers` fast
    /// tokenizer (`PreTrainedTokenizerFast`) or a `tokenizers.Tokenizer`,
    /// duck-typed (nothing is imported). `vocab_size`: the model's, when
    /// its embedding has more rows than the tokenizer has tokens. Stop
    /// tokens: `stop_token_ids`, else the tokenizer's `eos_token_id`, else
    /// the special tokens named like common stop tokens.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, vocab_size = None, *, stop_token_ids = None))]
    fn from_huggingface(
        py: Python<'_>,
        tokenizer: &Bound<'_, PyAny>,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<i64>>,
    ) -> PyResult<Self> {
        guard(|| {
            let backend = if tokenizer.hasattr("backend_tokenizer")? {
                tokenizer.getattr("backend_tokenizer")?
            } else {
                tokenizer.clone()
            };
            if !backend.hasattr("to_str")? {
                return Err(raise(
                    py,
                    "TokenizerError",
                    format!(
                        "{} is not a Hugging Face fast tokenizer (no backend_tokenizer.to_str()); load it with use_fast=True, or use TokenizerInfo.from_tokenizer_json / from_gguf / from_tiktoken",
                        tokenizer.get_type().name()?
                    ),
                    kind("unsupported tokenizer"),
                ));
            }
            let json: String = backend.call_method0("to_str")?.extract()?;
            let mut eos_ids: Vec<i64> = Vec::new();
            if tokenizer.hasattr("eos_token_id")? {
                if let Ok(Some(id)) = tokenizer.getattr("eos_token_id")?.extract::<Option<i64>>() {
                    eos_ids.push(id);
                }
            }
            let name = tokenizer
                .getattr("name_or_path")
                .and_then(|n| n.extract::<String>())
                .unwrap_or_else(|_| "huggingface".to_string());
            let vocab = py
                .detach(|| {
                    TokenVocab::from_hf_tokenizer_str(&json, "tokenizer object", &name, None)
                })
                .or_else(|e| {
                    // no conventional EOS name: take the tokenizer's own EOS
                    let json_v: Option<serde_json::Value> = serde_json::from_str(&json).ok();
                    let eos_name = eos_ids.first().and_then(|&id| {
                        let added = json_v.as_ref()?.get("added_tokens")?.as_array()?;
                        added.iter().find_map(|t| {
                            (t.get("id")?.as_i64()? == id)
                                .then(|| t.get("content")?.as_str().map(str::to_string))?
                        })
                    });
                    match eos_name {
                        Some(n) => TokenVocab::from_hf_tokenizer_str(
                            &json,
                            "tokenizer object",
                            &name,
                            Some(&n),
                        ),
                        None => Err(e),
                    }
                })
                .map_err(|e| vocab_error(py, &e))?;
            let stop = stop_token_ids.or_else(|| (!eos_ids.is_empty()).then(|| eos_ids.clone()));
            let ids = stop_name_ids(&json);
            let extra = detect_stops(&vocab, |s| ids.get(s).copied());
            Self::build(py, vocab, vocab_size, stop, &extra)
        })
    }

    /// From a Hugging Face `tokenizer.json` file.
    #[staticmethod]
    #[pyo3(signature = (path, vocab_size = None, *, stop_token_ids = None, eos_token = None))]
    fn from_tokenizer_json(
        py: Python<'_>,
        path: std::path::PathBuf,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<i64>>,
        eos_token: Option<String>,
    ) -> PyResult<Self> {
        guard(|| {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                raise(
                    py,
                    "TokenizerError",
                    format!("cannot read {}: {e}", path.display()),
                    kind("io"),
                )
            })?;
            let vocab = py
                .detach(|| {
                    TokenVocab::from_hf_tokenizer_str(
                        &text,
                        &path.display().to_string(),
                        &stem(&path),
                        eos_token.as_deref(),
                    )
                })
                .map_err(|e| vocab_error(py, &e))?;
            let ids = stop_name_ids(&text);
            let extra = detect_stops(&vocab, |s| ids.get(s).copied());
            Self::build(py, vocab, vocab_size, stop_token_ids, &extra)
        })
    }

    /// From the tokenizer stored in a GGUF model file (llama.cpp's
    /// layout; byte-level BPE). Stop tokens: the file's EOS and its
    /// control tokens named like common stop tokens.
    #[staticmethod]
    #[pyo3(signature = (path, vocab_size = None, *, stop_token_ids = None))]
    fn from_gguf(
        py: Python<'_>,
        path: std::path::PathBuf,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<i64>>,
    ) -> PyResult<Self> {
        guard(|| {
            let (vocab, info) = py
                .detach(|| TokenVocab::from_gguf(&path))
                .map_err(|e| vocab_error(py, &e))?;
            let extra = detect_stops(&vocab, |s| info.control.get(s).copied());
            Self::build(py, vocab, vocab_size, stop_token_ids, &extra)
        })
    }

    /// One of the tiktoken BPEs built into the package (`o200k_base`,
    /// `cl100k_base`, `r50k_base`; no network, no `tiktoken` import).
    #[staticmethod]
    #[pyo3(signature = (name, vocab_size = None, *, stop_token_ids = None))]
    fn from_tiktoken(
        py: Python<'_>,
        name: &str,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<i64>>,
    ) -> PyResult<Self> {
        guard(|| {
            let bpe: TiktokenBpe = name.parse().map_err(|e| vocab_error(py, &e))?;
            let vocab = py
                .detach(|| TokenVocab::tiktoken(bpe))
                .map_err(|e| vocab_error(py, &e))?;
            Self::build(py, vocab, vocab_size, stop_token_ids, &[])
        })
    }

    /// The model's vocabulary size (bitmask rows cover `0..vocab_size`).
    #[getter]
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size
    }

    /// Number of token ids the tokenizer itself defines.
    #[getter]
    fn tokenizer_vocab_size(&self) -> usize {
        self.inner.vocab.len()
    }

    /// Tokens that end generation once the grammar accepts.
    #[getter]
    fn stop_token_ids(&self) -> Vec<TokenId> {
        self.inner.stop.clone()
    }

    /// Control tokens and unused ids: never allowed as grammar text.
    #[getter]
    fn special_token_ids(&self) -> Vec<TokenId> {
        let v = &self.inner.vocab;
        (0..v.len() as TokenId)
            .filter(|&t| v.is_special(t))
            .collect()
    }

    /// The exact bytes of every token id of the tokenizer (special tokens
    /// are empty).
    #[getter]
    fn decoded_vocab<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let v = &self.inner.vocab;
        PyList::new(
            py,
            (0..v.len() as TokenId).map(|t| PyBytes::new(py, v.token_bytes(t))),
        )
    }

    /// Name of the tokenizer (file stem, BPE name, model path).
    #[getter]
    fn name(&self) -> String {
        self.inner.vocab.name().to_string()
    }

    /// The ids of `text` (ordinary tokens; special-token text is not
    /// special), with the tokenizer's own encoder.
    fn encode(&self, py: Python<'_>, text: &str) -> PyResult<Vec<TokenId>> {
        guard(|| {
            self.inner
                .vocab
                .encode(text)
                .map_err(|e| vocab_error(py, &e))
        })
    }

    /// The concatenated bytes of `ids` (special tokens add nothing).
    fn decode<'py>(&self, py: Python<'py>, ids: Vec<i64>) -> Bound<'py, PyBytes> {
        let v = &self.inner.vocab;
        let mut out = Vec::new();
        for id in ids {
            if id >= 0 && (id as usize) < v.len() {
                out.extend_from_slice(v.token_bytes(id as TokenId));
            }
        }
        PyBytes::new(py, &out)
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenizerInfo(name={:?}, tokenizer_vocab_size={}, vocab_size={}, stop_token_ids={:?})",
            self.inner.vocab.name(),
            self.inner.vocab.len(),
            self.inner.vocab_size,
            self.inner.stop
        )
    }
}

/// The ids of the [`STOP_NAMES`] a `tokenizer.json` text defines (added
/// tokens and the model's vocabulary); parsed once per load.
fn stop_name_ids(json: &str) -> std::collections::HashMap<&'static str, TokenId> {
    let mut out = std::collections::HashMap::new();
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json) else {
        return out;
    };
    for &s in STOP_NAMES {
        let added = v
            .get("added_tokens")
            .and_then(|a| a.as_array())
            .and_then(|a| {
                a.iter().find_map(|t| {
                    (t.get("content")?.as_str()? == s).then(|| t.get("id")?.as_u64())?
                })
            });
        let id = added.or_else(|| v.get("model")?.get("vocab")?.get(s)?.as_u64());
        if let Some(id) = id {
            out.insert(s, id as TokenId);
        }
    }
    out
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tokenizer".into())
}
