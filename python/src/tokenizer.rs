//! `TokenizerInfo`: the bytes of every token of a model's tokenizer, its
//! stop tokens, and the model's vocabulary size (which may be larger than
//! the tokenizer's: the padding ids are never allowed).

use std::path::Path;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use zapspec_core::{TokenId, Vocabulary};
use zapspec_vocab::{decode_token_text, TiktokenBpe, TokenText, TokenVocab};

use crate::errors::{guard, invalid_json, kind, raise, vocab_error};

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
    /// Tokens that end generation once the grammar accepts (may be
    /// empty: then nothing ends it but the grammar's own end, see
    /// `GrammarMatcher(terminate_without_stop_token=True)`).
    pub stop: Vec<TokenId>,
    /// Ids the tokenizer defines: `vocab.len()`, or one less when the
    /// engine's vocabulary ends with a hidden end-of-sequence token (a
    /// tokenizer without stop tokens, or an empty one: the engine needs
    /// an EOS id to say "the grammar accepts"; the hidden id is never in
    /// a bitmask row, never accepted, never reported).
    pub n_tokens: usize,
    /// XGrammar's `VocabType` value (0 raw, 1 byte fallback, 2 byte level).
    pub vocab_type: u8,
    /// Whether the tokenizer prepends a space to the text it encodes.
    pub add_prefix_space: bool,
    /// The text of control tokens whose engine bytes are empty (a Hugging
    /// Face tokenizer's special added tokens: `<s>`, `<|im_end|>`), shown
    /// by `decoded_vocab` as XGrammar shows it. Display only: the engine
    /// never matches a control token as text.
    pub control_text: std::collections::HashMap<TokenId, Vec<u8>>,
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
        // duplicates dropped, the caller's order kept
        let mut seen = std::collections::HashSet::new();
        let stop: Vec<TokenId> = stop.into_iter().filter(|t| seen.insert(*t)).collect();
        Ok(TokInner {
            n_tokens: n,
            vocab: Arc::new(vocab),
            vocab_size,
            stop,
            vocab_type: 0,
            add_prefix_space: false,
            control_text: Default::default(),
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
    /// `dump_metadata()` as a JSON value.
    pub(crate) fn metadata_json(&self) -> serde_json::Value {
        let t = &self.inner;
        serde_json::json!({
            "vocab_type": t.vocab_type,
            "vocab_size": t.vocab_size,
            "add_prefix_space": t.add_prefix_space,
            "stop_token_ids": t.stop,
        })
    }

    /// A loaded vocabulary with the model's size and its stop tokens
    /// (`stop`, else EOS and `extra_stop`): what every constructor ends with.
    fn build(
        py: Python<'_>,
        vocab: TokenVocab,
        vocab_size: Option<usize>,
        stop: Option<Vec<i64>>,
        extra_stop: &[TokenId],
    ) -> PyResult<Self> {
        Self::build_with(py, vocab, vocab_size, stop, extra_stop, Meta::default())
    }

    /// [`Self::build`] with the vocabulary's metadata.
    fn build_with(
        py: Python<'_>,
        vocab: TokenVocab,
        vocab_size: Option<usize>,
        stop: Option<Vec<i64>>,
        extra_stop: &[TokenId],
        meta: Meta,
    ) -> PyResult<Self> {
        let mut inner = TokInner::new(py, vocab, vocab_size, stop, extra_stop)?;
        inner.vocab_type = meta.vocab_type;
        inner.add_prefix_space = meta.add_prefix_space;
        if meta.hidden_eos {
            inner.n_tokens -= 1;
            if vocab_size.is_none() {
                inner.vocab_size = inner.n_tokens;
            }
        }
        inner.control_text = meta.control_text;
        // only tokens the engine holds without bytes need a display text
        let v = &inner.vocab;
        inner
            .control_text
            .retain(|&t, _| (t as usize) < v.len() && v.token_bytes(t).is_empty());
        Ok(TokenizerInfo {
            inner: Arc::new(inner),
        })
    }

    /// The vocabulary of `encoded_vocab` written as `vocab_type` says
    /// (XGrammar's constructor; see `new`).
    #[allow(clippy::too_many_arguments)]
    fn from_list(
        py: Python<'_>,
        encoded_vocab: &Bound<'_, PyAny>,
        kind_: TokenText,
        vocab_type: u8,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<i64>>,
        special_token_ids: Option<Vec<i64>>,
        add_prefix_space: bool,
    ) -> PyResult<Self> {
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
        let n = tokens.len();
        let mut special = ids_below(
            py,
            &special_token_ids.unwrap_or_default(),
            n,
            "special token",
        )?;
        let limit = vocab_size.unwrap_or(n).max(n);
        let stops: Vec<TokenId> = match &stop_token_ids {
            Some(ids) => ids_below(py, ids, limit, "stop token")?,
            None => STOP_NAMES
                .iter()
                .filter_map(|s| names.get(*s).copied())
                .collect(),
        };
        // the engine's end-of-sequence id: the first stop token the
        // tokenizer defines, else a hidden empty token after the last
        let (eos, hidden_eos) = match stops.iter().find(|&&t| (t as usize) < n) {
            Some(&t) => (t, false),
            None => {
                tokens.push(Vec::new());
                (n as TokenId, true)
            }
        };
        // stop tokens are control tokens: never grammar text
        special.extend(stops.iter().copied().filter(|&t| (t as usize) < n));
        let vocab = TokenVocab::from_tokens("encoded_vocab", tokens, &special, eos)
            .map_err(|e| vocab_error(py, &e))?;
        let stop = Some(stops.iter().map(|&t| t as i64).collect());
        Self::build_with(
            py,
            vocab,
            vocab_size,
            stop,
            &[],
            Meta {
                vocab_type,
                add_prefix_space,
                hidden_eos,
                control_text: Default::default(),
            },
        )
    }
}

/// What a tokenizer says of its vocabulary beside the tokens.
#[derive(Default, Clone)]
struct Meta {
    vocab_type: u8,
    add_prefix_space: bool,
    hidden_eos: bool,
    /// `TokInner::control_text`.
    control_text: std::collections::HashMap<TokenId, Vec<u8>>,
}

/// The special added tokens' text of a `tokenizer.json`, by id.
fn hf_control_text(json: &str) -> std::collections::HashMap<TokenId, Vec<u8>> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json) else {
        return Default::default();
    };
    let Some(added) = v.get("added_tokens").and_then(|a| a.as_array()) else {
        return Default::default();
    };
    added
        .iter()
        .filter(|t| t.get("special").and_then(|s| s.as_bool()).unwrap_or(false))
        .filter_map(|t| {
            let id = t.get("id")?.as_u64()?;
            let text = t.get("content")?.as_str()?;
            Some((id as TokenId, text.as_bytes().to_vec()))
        })
        .collect()
}

/// XGrammar's `VocabType` value of a `TokenText`.
fn vocab_type_value(k: TokenText) -> u8 {
    match k {
        TokenText::Raw => 0,
        TokenText::ByteFallback => 1,
        TokenText::ByteLevel => 2,
    }
}

/// The `VocabType` and `add_prefix_space` a Hugging Face `tokenizer.json`
/// describes: byte level when its decoder or pre-tokenizer is
/// `ByteLevel`, byte fallback when its model has byte pieces (`<0x0A>`)
/// or a `▁` decoder; a prefix space when its normalizer prepends `▁` or
/// its `Metaspace` step adds one.
fn hf_metadata(json: &str) -> Meta {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json) else {
        return Meta::default();
    };
    fn has_type(v: Option<&serde_json::Value>, ty: &str) -> bool {
        let Some(v) = v else { return false };
        if v.get("type").and_then(|t| t.as_str()) == Some(ty) {
            return true;
        }
        ["decoders", "pretokenizers", "normalizers"]
            .iter()
            .any(|k| {
                v.get(*k)
                    .and_then(|a| a.as_array())
                    .is_some_and(|a| a.iter().any(|x| has_type(Some(x), ty)))
            })
    }
    fn find<'a>(v: Option<&'a serde_json::Value>, ty: &str) -> Option<&'a serde_json::Value> {
        let v = v?;
        if v.get("type").and_then(|t| t.as_str()) == Some(ty) {
            return Some(v);
        }
        ["decoders", "pretokenizers", "normalizers"]
            .iter()
            .find_map(|k| {
                v.get(*k)?
                    .as_array()?
                    .iter()
                    .find_map(|x| find(Some(x), ty))
            })
    }
    let decoder = v.get("decoder");
    let pre = v.get("pre_tokenizer");
    let norm = v.get("normalizer");
    let byte_pieces = v
        .get("model")
        .and_then(|m| m.get("vocab"))
        .and_then(|m| m.as_object())
        .map_or(0, |m| {
            (0..=255u32)
                .filter(|b| m.contains_key(&format!("<0x{b:02X}>")))
                .count()
        });
    let vocab_type = if has_type(decoder, "ByteLevel") || has_type(pre, "ByteLevel") {
        2
    } else if byte_pieces >= 128 || has_type(decoder, "ByteFallback") {
        1
    } else {
        0
    };
    let prepend = find(norm, "Prepend")
        .and_then(|p| p.get("prepend"))
        .and_then(|p| p.as_str())
        .is_some_and(|p| p == "▁" || p == " ");
    let metaspace = find(pre, "Metaspace").is_some_and(|m| {
        m.get("add_prefix_space").and_then(|a| a.as_bool()) == Some(true)
            || matches!(
                m.get("prepend_scheme").and_then(|a| a.as_str()),
                Some("always") | Some("first")
            )
    });
    Meta {
        vocab_type,
        add_prefix_space: vocab_type == 1 && (prepend || metaspace),
        hidden_eos: false,
        control_text: hf_control_text(json),
    }
}

#[pymethods]
impl TokenizerInfo {
    /// A tokenizer from its vocabulary as a list of token strings (or
    /// bytes), index = token id, written as `vocab_type` says (XGrammar's
    /// constructor and defaults). Empty entries and `special_token_ids`
    /// are special; `stop_token_ids` (an id or a list; default: the first
    /// of `</s>`, `<|endoftext|>`, `<|im_end|>`, `<|eot_id|>`, `<eos>` …
    /// that the vocabulary has) may be empty, and so may the vocabulary
    /// (a matcher over it accepts strings, not tokens).
    /// `add_prefix_space`: whether the tokenizer prepends a space to what
    /// it encodes (vLLM passes it for Mistral tokenizers).
    #[new]
    #[pyo3(signature = (encoded_vocab, vocab_type = None, *, vocab_size = None, stop_token_ids = None, add_prefix_space = false, special_token_ids = None))]
    fn new(
        py: Python<'_>,
        encoded_vocab: &Bound<'_, PyAny>,
        vocab_type: Option<&Bound<'_, PyAny>>,
        vocab_size: Option<usize>,
        stop_token_ids: Option<&Bound<'_, PyAny>>,
        add_prefix_space: bool,
        special_token_ids: Option<Vec<i64>>,
    ) -> PyResult<Self> {
        guard(|| {
            let kind_ = match vocab_type {
                Some(v) => token_text_kind(py, v)?,
                None => TokenText::Raw,
            };
            let stops = stop_ids(stop_token_ids)?;
            Self::from_list(
                py,
                encoded_vocab,
                kind_,
                vocab_type_value(kind_),
                vocab_size,
                stops,
                special_token_ids,
                add_prefix_space,
            )
        })
    }

    /// XGrammar's `from_vocab_and_metadata`: the vocabulary list and the
    /// JSON of `dump_metadata()` (`vocab_type`, `vocab_size`,
    /// `add_prefix_space`, `stop_token_ids`).
    #[staticmethod]
    fn from_vocab_and_metadata(
        py: Python<'_>,
        encoded_vocab: &Bound<'_, PyAny>,
        metadata: &str,
    ) -> PyResult<Self> {
        guard(|| {
            let m: serde_json::Value =
                serde_json::from_str(metadata).map_err(|e| invalid_json(py, "the metadata", &e))?;
            let m = Metadata::read(py, &m, "the metadata")?;
            let kind_ = [
                TokenText::Raw,
                TokenText::ByteFallback,
                TokenText::ByteLevel,
            ][m.vocab_type as usize];
            Self::from_list(
                py,
                encoded_vocab,
                kind_,
                m.vocab_type,
                Some(m.vocab_size),
                Some(m.stop),
                None,
                m.add_prefix_space,
            )
        })
    }

    /// The metadata that, with the vocabulary list, rebuilds this
    /// tokenizer info (`from_vocab_and_metadata`): compact JSON with
    /// `vocab_type`, `vocab_size`, `add_prefix_space`, `stop_token_ids`,
    /// in XGrammar's layout.
    fn dump_metadata(&self) -> String {
        let t = &self.inner;
        format!(
            "{{\"vocab_type\":{},\"vocab_size\":{},\"add_prefix_space\":{},\"stop_token_ids\":{}}}",
            t.vocab_type,
            t.vocab_size,
            t.add_prefix_space,
            serde_json::to_string(&t.stop).unwrap_or_else(|_| "[]".into())
        )
    }

    /// This tokenizer info as JSON: its metadata, the bytes of every
    /// token (hex) and its special ids; `deserialize_json` rebuilds it
    /// (same ids, bytes, stop and special tokens; its `encode` is then
    /// greedy longest match, not the original tokenizer's merges).
    fn serialize_json(&self) -> String {
        let t = &self.inner;
        let v = &t.vocab;
        let tokens: Vec<String> = (0..t.n_tokens as TokenId)
            .map(|i| hex(v.token_bytes(i)))
            .collect();
        let mut out = self.metadata_json();
        out["__VERSION__"] = SERIALIZATION_VERSION.into();
        out["kind"] = "TokenizerInfo".into();
        out["name"] = v.name().into();
        out["special_token_ids"] = (0..t.n_tokens as TokenId)
            .filter(|&i| v.is_special(i))
            .collect::<Vec<_>>()
            .into();
        out["decoded_vocab_hex"] = tokens.into();
        let control: serde_json::Map<String, serde_json::Value> = t
            .control_text
            .iter()
            .map(|(id, b)| (id.to_string(), hex(b).into()))
            .collect();
        out["control_text_hex"] = control.into();
        out.to_string()
    }

    /// A tokenizer info from `serialize_json`'s text.
    /// `zapspec.InvalidJSONError`, `DeserializeFormatError`,
    /// `DeserializeVersionError` for text it did not write.
    #[staticmethod]
    fn deserialize_json(py: Python<'_>, json_string: &str) -> PyResult<Self> {
        guard(|| {
            let v = check_serialized(py, json_string, "TokenizerInfo")?;
            let what = "serialized TokenizerInfo";
            let m = Metadata::read(py, &v, what)?;
            let tokens: Vec<Vec<u8>> = v
                .get("decoded_vocab_hex")
                .and_then(|x| x.as_array())
                .and_then(|a| a.iter().map(|x| x.as_str().and_then(unhex)).collect())
                .ok_or_else(|| no_valid(py, what, "decoded_vocab_hex"))?;
            let list = PyList::new(py, tokens.iter().map(|b| PyBytes::new(py, b)))?;
            let special = json_ids(py, &v, "special_token_ids", what)?
                .into_iter()
                .filter(|&i| i >= 0 && (i as usize) < tokens.len())
                .collect();
            let mut info = Self::from_list(
                py,
                list.as_any(),
                TokenText::Raw,
                m.vocab_type,
                Some(m.vocab_size),
                Some(m.stop),
                Some(special),
                m.add_prefix_space,
            )?;
            let control = v.get("control_text_hex").and_then(|c| c.as_object());
            if let (Some(c), Some(inner)) = (control, Arc::get_mut(&mut info.inner)) {
                for (id, h) in c {
                    if let (Ok(id), Some(b)) = (id.parse::<TokenId>(), h.as_str().and_then(unhex)) {
                        inner.control_text.insert(id, b);
                    }
                }
            }
            Ok(info)
        })
    }

    /// XGrammar's detection of a vocabulary's type from its `{token: id}`
    /// dict: byte fallback when it has at least 128 of the byte pieces
    /// `<0x00>`…`<0xFF>`, byte level when at least 128 of GPT-2's 256
    /// byte characters are tokens and 99% of the tokens are spelt in
    /// them, else `None`.
    #[staticmethod]
    fn _detect_vocab_type_from_vocab<'py>(
        py: Python<'py>,
        vocab_dict: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let keys: Vec<String> = vocab_dict
            .try_iter()?
            .map(|k| k.and_then(|k| k.extract::<String>()))
            .collect::<PyResult<_>>()?;
        let set: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        let pieces = (0..=255u32)
            .filter(|b| set.contains(format!("<0x{b:02X}>").as_str()))
            .count();
        let vt = if pieces >= 128 {
            Some(1)
        } else {
            let in_charset = |c: char| {
                let mut b = [0u8; 4];
                decode_token_text(c.encode_utf8(&mut b), TokenText::ByteLevel).is_some()
            };
            let singles = keys
                .iter()
                .filter(|k| {
                    let mut cs = k.chars();
                    matches!((cs.next(), cs.next()), (Some(c), None) if in_charset(c))
                })
                .count();
            let spelt = keys.iter().filter(|k| k.chars().all(in_charset)).count();
            (singles >= 128 && spelt as f64 >= 0.99 * keys.len() as f64).then_some(2)
        };
        match vt {
            None => Ok(None),
            Some(v) => Ok(Some(
                py.import("zapspec")?.getattr("VocabType")?.call1((v,))?,
            )),
        }
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
        stop_token_ids: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        guard(|| {
            let stop_token_ids = stop_ids(stop_token_ids)?;
            if stop_token_ids.as_ref().is_some_and(|s| s.is_empty()) {
                return Err(raise(
                    py,
                    "TokenizerError",
                    "stop_token_ids cannot be empty",
                    kind("stop token"),
                ));
            }
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
            Self::build_with(py, vocab, vocab_size, stop, &extra, hf_metadata(&json))
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
            Self::build_with(
                py,
                vocab,
                vocab_size,
                stop_token_ids,
                &extra,
                hf_metadata(&text),
            )
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
            let meta = Meta {
                vocab_type: 2,
                ..Meta::default()
            };
            Self::build_with(py, vocab, vocab_size, stop_token_ids, &extra, meta)
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
        self.inner.n_tokens
    }

    /// Tokens that end generation once the grammar accepts.
    #[getter]
    fn stop_token_ids(&self) -> Vec<TokenId> {
        self.inner.stop.clone()
    }

    /// Control tokens, unused ids and the padding ids past the
    /// tokenizer's (`tokenizer_vocab_size..vocab_size`): never allowed as
    /// grammar text.
    #[getter]
    fn special_token_ids(&self) -> Vec<TokenId> {
        let t = &self.inner;
        let v = &t.vocab;
        (0..t.n_tokens as TokenId)
            .filter(|&i| v.is_special(i))
            .chain(t.n_tokens as TokenId..t.vocab_size as TokenId)
            .collect()
    }

    /// How the vocabulary list writes token bytes (`zapspec.VocabType`;
    /// `RAW` for tokenizers built from bytes).
    #[getter]
    fn vocab_type<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("zapspec")?
            .getattr("VocabType")?
            .call1((self.inner.vocab_type,))
    }

    /// Whether the tokenizer prepends a space to the text it encodes.
    #[getter]
    fn add_prefix_space(&self) -> bool {
        self.inner.add_prefix_space
    }

    /// XGrammar's older name of `add_prefix_space`.
    #[getter]
    fn prepend_space_in_tokenization(&self) -> bool {
        self.inner.add_prefix_space
    }

    /// The exact bytes of every token id of the tokenizer; a control token
    /// that has no text bytes shows its name (`<s>`, as XGrammar shows
    /// it), though the engine never matches it as text.
    #[getter]
    fn decoded_vocab<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let t = &self.inner;
        PyList::new(
            py,
            (0..t.n_tokens as TokenId).map(|i| {
                let b = t.control_text.get(&i).map(Vec::as_slice);
                PyBytes::new(py, b.unwrap_or_else(|| t.vocab.token_bytes(i)))
            }),
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
            if id >= 0 && (id as usize) < self.inner.n_tokens {
                out.extend_from_slice(v.token_bytes(id as TokenId));
            }
        }
        PyBytes::new(py, &out)
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenizerInfo(name={:?}, tokenizer_vocab_size={}, vocab_size={}, stop_token_ids={:?})",
            self.inner.vocab.name(),
            self.inner.n_tokens,
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

/// The version `serialize_json` writes and `deserialize_json` reads.
pub(crate) const SERIALIZATION_VERSION: &str = "zapspec-v1";

/// The version of the format `serialize_json` writes (the
/// `"__VERSION__"` field of every serialized grammar, compiled grammar and
/// tokenizer info): `"zapspec-v1"`. zapspec writes its own format, not
/// XGrammar's (`"v16"`), and `deserialize_json` raises
/// `DeserializeVersionError` for any other version.
#[pyfunction]
pub(crate) fn get_serialization_version() -> &'static str {
    SERIALIZATION_VERSION
}

/// `bytes` as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase or uppercase hex as bytes; `None` for anything else.
pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The JSON object of a `serialize_json` text of `kind`, or the package's
/// `InvalidJSONError` / `DeserializeFormatError` /
/// `DeserializeVersionError`.
pub(crate) fn check_serialized(
    py: Python<'_>,
    text: &str,
    kind_: &str,
) -> PyResult<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| invalid_json(py, &format!("the serialized {kind_}"), &e))?;
    match v.get("__VERSION__").and_then(|x| x.as_str()) {
        Some(SERIALIZATION_VERSION) => {}
        Some(other) => {
            return Err(raise(
                py,
                "DeserializeVersionError",
                format!(
                    "serialized by version {other:?}; this package reads {SERIALIZATION_VERSION:?}"
                ),
                kind("version"),
            ))
        }
        None => {
            return Err(raise(
                py,
                "DeserializeFormatError",
                format!("not a serialized {kind_}: no \"__VERSION__\""),
                kind("format"),
            ))
        }
    }
    if v.get("kind").and_then(|x| x.as_str()) != Some(kind_) {
        return Err(raise(
            py,
            "DeserializeFormatError",
            format!("not a serialized {kind_}"),
            kind("format"),
        ));
    }
    Ok(v)
}

/// The fields of `dump_metadata()`, read from a JSON object (`what` names
/// it in the `DeserializeFormatError` for a missing or malformed field).
struct Metadata {
    vocab_type: u8,
    vocab_size: usize,
    add_prefix_space: bool,
    stop: Vec<i64>,
}

impl Metadata {
    fn read(py: Python<'_>, v: &serde_json::Value, what: &str) -> PyResult<Self> {
        let bad = |k: &str| no_valid(py, what, k);
        let vocab_type = v
            .get("vocab_type")
            .and_then(|x| x.as_u64())
            .filter(|&x| x <= 2)
            .ok_or_else(|| bad("vocab_type"))? as u8;
        let vocab_size = v
            .get("vocab_size")
            .and_then(|x| x.as_u64())
            .ok_or_else(|| bad("vocab_size"))? as usize;
        let add_prefix_space = v
            .get("add_prefix_space")
            .and_then(|x| x.as_bool())
            .ok_or_else(|| bad("add_prefix_space"))?;
        Ok(Metadata {
            vocab_type,
            vocab_size,
            add_prefix_space,
            stop: json_ids(py, v, "stop_token_ids", what)?,
        })
    }
}

/// The integer list `v[key]`, or `DeserializeFormatError`.
fn json_ids(py: Python<'_>, v: &serde_json::Value, key: &str, what: &str) -> PyResult<Vec<i64>> {
    v.get(key)
        .and_then(|x| x.as_array())
        .and_then(|a| a.iter().map(|x| x.as_i64()).collect())
        .ok_or_else(|| no_valid(py, what, key))
}

/// `DeserializeFormatError`: `what` has no valid `key`.
fn no_valid(py: Python<'_>, what: &str, key: &str) -> PyErr {
    raise(
        py,
        "DeserializeFormatError",
        format!("{what} has no valid {key:?}"),
        kind("format"),
    )
}

/// `ids` as token ids below `limit`, or `TokenizerError` naming the first
/// that is not (`what`: "stop token", "special token").
fn ids_below(py: Python<'_>, ids: &[i64], limit: usize, what: &str) -> PyResult<Vec<TokenId>> {
    ids.iter()
        .map(|&id| {
            if id < 0 || id as usize >= limit {
                Err(raise(
                    py,
                    "TokenizerError",
                    format!("{what} id {id} is outside the vocabulary ({limit} ids)"),
                    kind(what),
                ))
            } else {
                Ok(id as TokenId)
            }
        })
        .collect()
}

/// `stop_token_ids` as XGrammar takes it: `None`, an id, or a list.
fn stop_ids(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match v {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => match v.extract::<i64>() {
            Ok(i) => Ok(Some(vec![i])),
            Err(_) => Ok(Some(v.extract()?)),
        },
    }
}
