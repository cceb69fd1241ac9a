//! Tokenizers stored in a GGUF file's metadata (`tokenizer.ggml.*`), as
//! llama.cpp writes them: the token strings, their types, the BPE merges,
//! the pre-tokenizer's name, BOS / EOS and the chat template.
//!
//! Only GPT-2-style byte-level BPE (`tokenizer.ggml.model = gpt2`) is
//! supported; every token string is mapped back through the GPT-2 byte
//! alphabet to its exact bytes, control tokens (type 3) are special with no
//! bytes. Encoding runs the `tokenizers` crate's BPE built from the same
//! vocabulary and merges, with the pre-tokenizer llama.cpp uses for the
//! file's `tokenizer.ggml.pre` (see [`PreTokenizer`]).
//!
//! The metadata is read with candle's `gguf_file` reader (tensor data is not
//! touched), so this module is behind the `gguf` cargo feature.
//!
//! Cost: reading the metadata of a 49k-token file and building the BPE
//! tables takes tens of milliseconds.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use candle_core::quantized::gguf_file;

use crate::{gpt2_unicode_to_byte, Encoder, TokenId, TokenVocab, VocabError};

/// GGUF token types (llama.cpp's `llama_token_type`).
const TOKEN_TYPE_NORMAL: i32 = 1;
const TOKEN_TYPE_CONTROL: i32 = 3;
const TOKEN_TYPE_USER_DEFINED: i32 = 4;
const TOKEN_TYPE_BYTE: i32 = 6;

/// How text is split before BPE, named by `tokenizer.ggml.pre`. Each is the
/// regex sequence llama.cpp applies for that name, expressed as the
/// equivalent Hugging Face pre-tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreTokenizer {
    /// `gpt2` / `default`: GPT-2's regex (`'s|'t|… ?\p{L}+| ?\p{N}+|…`).
    Gpt2,
    /// `smollm`, `starcoder`, `refact`: every digit alone (`\p{N}`), then
    /// GPT-2's regex.
    DigitsThenGpt2,
}

impl PreTokenizer {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "gpt2" | "default" => Some(PreTokenizer::Gpt2),
            "smollm" | "starcoder" | "refact" => Some(PreTokenizer::DigitsThenGpt2),
            _ => None,
        }
    }

    fn to_json(self) -> serde_json::Value {
        let byte_level = serde_json::json!({
            "type": "ByteLevel", "add_prefix_space": false,
            "trim_offsets": true, "use_regex": true
        });
        match self {
            PreTokenizer::Gpt2 => byte_level,
            PreTokenizer::DigitsThenGpt2 => serde_json::json!({
                "type": "Sequence",
                "pretokenizers": [
                    {"type": "Digits", "individual_digits": true},
                    byte_level
                ]
            }),
        }
    }
}

/// What a GGUF file says about its tokenizer besides the token bytes.
#[derive(Debug, Clone)]
pub struct GgufTokenizerInfo {
    /// `tokenizer.ggml.model` (always `gpt2` for files that load).
    pub model: String,
    /// `tokenizer.ggml.pre`.
    pub pre: String,
    /// The pre-tokenizer used for encoding.
    pub pre_tokenizer: PreTokenizer,
    /// `tokenizer.ggml.bos_token_id`.
    pub bos: Option<TokenId>,
    /// `tokenizer.ggml.eos_token_id`.
    pub eos: TokenId,
    /// `tokenizer.ggml.add_bos_token` (false when absent).
    pub add_bos: bool,
    /// `tokenizer.chat_template` (a Jinja template), if present.
    pub chat_template: Option<String>,
    /// Control tokens (type 3) by their text, e.g. `<|im_start|>`.
    pub control: HashMap<String, TokenId>,
}

fn fmt_err(path: &str, reason: impl Into<String>) -> VocabError {
    VocabError::Format {
        path: path.to_string(),
        reason: reason.into(),
    }
}

fn get<'a>(
    md: &'a HashMap<String, gguf_file::Value>,
    key: &str,
    path: &str,
) -> Result<&'a gguf_file::Value, VocabError> {
    md.get(key)
        .ok_or_else(|| fmt_err(path, format!("metadata key `{key}` is missing")))
}

fn strings(v: &gguf_file::Value, key: &str, path: &str) -> Result<Vec<String>, VocabError> {
    let arr = v
        .to_vec()
        .map_err(|e| fmt_err(path, format!("`{key}`: {e}")))?;
    arr.iter()
        .map(|x| {
            x.to_string()
                .cloned()
                .map_err(|e| fmt_err(path, format!("`{key}`: {e}")))
        })
        .collect()
}

fn u32_of(v: &gguf_file::Value) -> Option<u32> {
    use gguf_file::Value as V;
    match v {
        V::U8(x) => Some(*x as u32),
        V::U16(x) => Some(*x as u32),
        V::U32(x) => Some(*x),
        V::U64(x) => u32::try_from(*x).ok(),
        V::I32(x) => u32::try_from(*x).ok(),
        V::I64(x) => u32::try_from(*x).ok(),
        _ => None,
    }
}

impl TokenVocab {
    /// Loads the tokenizer of a GGUF file (llama.cpp layout): exact bytes of
    /// every token, control tokens special, EOS from
    /// `tokenizer.ggml.eos_token_id`, and an encoder equal to llama.cpp's for
    /// the supported pre-tokenizers. Returns the vocabulary and what else
    /// the file says (BOS, chat template, control tokens).
    pub fn from_gguf(path: &Path) -> Result<(Self, GgufTokenizerInfo), VocabError> {
        let p = path.display().to_string();
        let f = std::fs::File::open(path).map_err(|source| VocabError::Io {
            path: p.clone(),
            source,
        })?;
        let len = f
            .metadata()
            .map_err(|source| VocabError::Io {
                path: p.clone(),
                source,
            })?
            .len();
        let mut f = std::io::BufReader::new(f);
        // Every count and length checked against the file's size before
        // candle's reader allocates from it.
        zapspec_gguf::check_gguf_header(&mut f, len)
            .map_err(|e| fmt_err(&p, format!("not a readable GGUF file: {e}")))?;
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0)).map_err(|source| {
            VocabError::Io {
                path: p.clone(),
                source,
            }
        })?;
        let content = gguf_file::Content::read(&mut f)
            .map_err(|e| fmt_err(&p, format!("not a readable GGUF file: {e}")))?;
        Self::from_gguf_metadata(&content.metadata, &p)
    }

    /// [`from_gguf`](Self::from_gguf) on metadata already read; `path`
    /// names the file in errors.
    pub fn from_gguf_metadata(
        md: &HashMap<String, gguf_file::Value>,
        path: &str,
    ) -> Result<(Self, GgufTokenizerInfo), VocabError> {
        let model = get(md, "tokenizer.ggml.model", path)?
            .to_string()
            .map_err(|e| fmt_err(path, e.to_string()))?
            .clone();
        if model != "gpt2" {
            return Err(fmt_err(
                path,
                format!("tokenizer model `{model}` is not supported (only `gpt2` byte-level BPE)"),
            ));
        }
        let pre = match md.get("tokenizer.ggml.pre") {
            Some(v) => v
                .to_string()
                .map_err(|e| fmt_err(path, e.to_string()))?
                .clone(),
            None => "default".to_string(),
        };
        let pre_tokenizer = PreTokenizer::from_name(&pre).ok_or_else(|| {
            fmt_err(
                path,
                format!("pre-tokenizer `{pre}` is not supported (gpt2, default, smollm, starcoder, refact)"),
            )
        })?;
        let tokens = strings(get(md, "tokenizer.ggml.tokens", path)?, "tokens", path)?;
        let merges = strings(get(md, "tokenizer.ggml.merges", path)?, "merges", path)?;
        let types: Vec<i32> = match md.get("tokenizer.ggml.token_type") {
            Some(v) => v
                .to_vec()
                .map_err(|e| fmt_err(path, e.to_string()))?
                .iter()
                .map(|x| x.to_i32().map_err(|e| fmt_err(path, e.to_string())))
                .collect::<Result<_, _>>()?,
            None => vec![TOKEN_TYPE_NORMAL; tokens.len()],
        };
        if types.len() != tokens.len() {
            return Err(fmt_err(
                path,
                format!("{} token types for {} tokens", types.len(), tokens.len()),
            ));
        }
        let id = |key: &str| md.get(key).and_then(u32_of);
        let eos = id("tokenizer.ggml.eos_token_id")
            .ok_or_else(|| fmt_err(path, "no `tokenizer.ggml.eos_token_id`"))?;
        if eos as usize >= tokens.len() {
            return Err(fmt_err(
                path,
                format!("EOS id {eos} is past the vocabulary"),
            ));
        }
        let bos = id("tokenizer.ggml.bos_token_id").filter(|&b| (b as usize) < tokens.len());

        let alphabet = gpt2_unicode_to_byte();
        let mut bytes = Vec::with_capacity(tokens.len());
        let mut special = Vec::with_capacity(tokens.len());
        let mut control = HashMap::new();
        let mut vocab_json = serde_json::Map::with_capacity(tokens.len());
        for (i, (s, &ty)) in tokens.iter().zip(&types).enumerate() {
            match ty {
                TOKEN_TYPE_CONTROL => {
                    control.insert(s.clone(), i as TokenId);
                    bytes.push(Vec::new());
                    special.push(true);
                }
                TOKEN_TYPE_USER_DEFINED => {
                    // Literal text (llama.cpp matches it before BPE; we keep
                    // its bytes so masks see it, but the BPE never emits it).
                    bytes.push(s.as_bytes().to_vec());
                    special.push(false);
                }
                TOKEN_TYPE_NORMAL | TOKEN_TYPE_BYTE => {
                    let mut out = Vec::with_capacity(s.len());
                    for c in s.chars() {
                        match alphabet.get(&c) {
                            Some(&b) => out.push(b),
                            None => {
                                return Err(fmt_err(
                                    path,
                                    format!(
                                        "token {i} {s:?} has {c:?}, not in the byte-level alphabet"
                                    ),
                                ))
                            }
                        }
                    }
                    special.push(out.is_empty());
                    bytes.push(out);
                }
                _ => {
                    // unknown (2), unused (5), or undefined types: no text
                    bytes.push(Vec::new());
                    special.push(true);
                }
            }
            if !special[i] || ty == TOKEN_TYPE_CONTROL {
                vocab_json.insert(s.clone(), serde_json::Value::from(i as u64));
            }
        }
        bytes[eos as usize] = Vec::new();
        special[eos as usize] = true;

        // Control tokens are in the BPE vocabulary but not registered as
        // added tokens: text is encoded as plain text (llama.cpp's
        // `parse_special = false`), special ids are inserted by the caller.
        let json = serde_json::json!({
            "version": "1.0",
            "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": null,
            "pre_tokenizer": pre_tokenizer.to_json(),
            "post_processor": null,
            "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
            "model": {
                "type": "BPE", "dropout": null, "unk_token": null,
                "continuing_subword_prefix": null, "end_of_word_suffix": null,
                "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                "vocab": vocab_json, "merges": merges
            }
        });
        let text = serde_json::to_vec(&json).map_err(|e| fmt_err(path, e.to_string()))?;
        let tok = tokenizers::Tokenizer::from_bytes(&text)
            .map_err(|e| fmt_err(path, format!("cannot build the BPE: {e}")))?;
        let add_bos = matches!(
            md.get("tokenizer.ggml.add_bos_token"),
            Some(gguf_file::Value::Bool(true))
        );
        let chat_template = md
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok().cloned());
        let name = md
            .get("general.name")
            .and_then(|v| v.to_string().ok().cloned())
            .unwrap_or_else(|| "gguf".into());
        let vocab = Self::assemble(name, bytes, special, eos, Encoder::Hf(Arc::new(tok)));
        Ok((
            vocab,
            GgufTokenizerInfo {
                model,
                pre,
                pre_tokenizer,
                bos,
                eos,
                add_bos,
                chat_template,
                control,
            },
        ))
    }
}
