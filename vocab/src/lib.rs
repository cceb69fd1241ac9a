//! # zapspec-vocab
//!
//! [`TokenVocab`]: a [`Vocabulary`] with the exact bytes of every token, and
//! loaders for real tokenizers (like llguidance's `toktrie_tiktoken` and
//! `toktrie_hf_tokenizers`).
//!
//! Constrained decoding works on bytes: a grammar accepts byte strings, and a
//! token is allowed when its bytes extend the current prefix to a viable one.
//! So a vocabulary here is, first of all, "the bytes of every token".
//!
//! Loaders:
//! - [`TokenVocab::tiktoken`]: the o200k, cl100k and r50k BPEs that ship
//!   inside the `tiktoken-rs` crate (no network);
//! - [`TokenVocab::from_hf_tokenizer_json`]: a Hugging Face `tokenizer.json`
//!   via the `tokenizers` crate, with byte-level BPE tokens (GPT-2 style
//!   `Ġ` alphabet) and SentencePiece byte-fallback tokens (`<0x0A>`, `▁`)
//!   decoded to their real bytes;
//! - `TokenVocab::from_gguf` (cargo feature `gguf`): the byte-level BPE
//!   stored in a GGUF file's metadata (llama.cpp layout), e.g. SmolLM2's,
//!   with control tokens special and llama.cpp's pre-tokenizer;
//! - [`TokenVocab::bytes`] and [`TokenVocab::from_tokens`] for byte-level and
//!   hand-made vocabularies in tests and toy models.
//!
//! [`ChatMl`] builds chat prompts (system / user / assistant) as token ids
//! for ChatML models.
//!
//! Costs: a [`TokenVocab`] stores all token bytes in one flat buffer plus a
//! `u32` offset and a special flag per token ([`TokenVocab::heap_bytes`]);
//! [`Vocabulary::token_bytes`] is O(1). Loading a real tokenizer builds its
//! BPE tables and decodes every token once, O(vocabulary size), so load once
//! per process and clone (a real tokenizer is shared behind an `Arc`);
//! [`TokenVocab::find`] is a linear scan.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

pub mod chat;
#[cfg(feature = "gguf")]
pub mod gguf;

pub use chat::{ChatMl, Message, Role};
#[cfg(feature = "gguf")]
pub use gguf::{GgufTokenizerInfo, PreTokenizer};

pub use zapspec_core::{TokenId, Vocabulary};

/// Errors while loading a vocabulary or encoding text.
#[derive(Debug, thiserror::Error)]
pub enum VocabError {
    /// A tokenizer file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file's path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A tokenizer file that does not parse or has an unexpected shape.
    #[error("tokenizer file {path}: {reason}")]
    Format {
        /// The file's path.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `tiktoken-rs` failed to build a BPE, or an unknown BPE name.
    #[error("tiktoken: {0}")]
    Tiktoken(String),
    /// No EOS was given and none of the usual EOS token strings exists.
    #[error("no end-of-sequence token: none of {tried:?} is in the vocabulary")]
    NoEos {
        /// The token strings looked up, in order.
        tried: Vec<String>,
    },
    /// A named token (e.g. the requested EOS) that the vocabulary lacks.
    #[error("token {token:?} is not in the vocabulary")]
    UnknownToken {
        /// The token string looked up.
        token: String,
    },
    /// The tokenizer failed to encode a text.
    #[error("cannot encode text: {0}")]
    Encode(String),
}

/// Most tokens (largest token id + 1) a loaded vocabulary may have: 2^22.
pub const MAX_VOCAB_TOKENS: usize = 1 << 22;

/// The tiktoken BPE vocabularies that ship inside `tiktoken-rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TiktokenBpe {
    /// GPT-4o / o-series, ≈200k tokens.
    O200k,
    /// GPT-4 / GPT-3.5, ≈100k tokens.
    Cl100k,
    /// GPT-3 / GPT-2, ≈50k tokens.
    R50k,
}

impl TiktokenBpe {
    /// The encoding's name in `tiktoken` (`o200k_base`, `cl100k_base`,
    /// `r50k_base`).
    pub fn name(self) -> &'static str {
        match self {
            TiktokenBpe::O200k => "o200k_base",
            TiktokenBpe::Cl100k => "cl100k_base",
            TiktokenBpe::R50k => "r50k_base",
        }
    }
}

impl std::str::FromStr for TiktokenBpe {
    type Err = VocabError;
    fn from_str(s: &str) -> Result<Self, VocabError> {
        match s.trim_end_matches("_base") {
            "o200k" => Ok(TiktokenBpe::O200k),
            "cl100k" => Ok(TiktokenBpe::Cl100k),
            "r50k" | "gpt2" => Ok(TiktokenBpe::R50k),
            _ => Err(VocabError::Tiktoken(format!(
                "unknown BPE {s:?}; expected o200k, cl100k or r50k"
            ))),
        }
    }
}

#[derive(Clone)]
enum Encoder {
    /// Greedy longest-match over the token bytes (hand-made vocabularies).
    Greedy {
        by_bytes: HashMap<Vec<u8>, TokenId>,
        max_len: usize,
    },
    Tiktoken(Arc<tiktoken_rs::CoreBPE>),
    Hf(Arc<tokenizers::Tokenizer>),
}

/// A vocabulary: the bytes of every token (stored flat), which tokens are
/// special, the EOS token, and an encoder from text to ids.
#[derive(Clone)]
pub struct TokenVocab {
    name: String,
    bytes: Vec<u8>,
    offsets: Vec<u32>,
    special: Vec<bool>,
    eos: TokenId,
    encoder: Encoder,
}

impl std::fmt::Debug for TokenVocab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenVocab")
            .field("name", &self.name)
            .field("len", &self.len())
            .field("eos", &self.eos)
            .finish()
    }
}

impl TokenVocab {
    /// A vocabulary from explicit token bytes. Tokens with empty bytes and
    /// those listed in `special` are special; `eos` must be one of the ids.
    pub fn from_tokens(
        name: impl Into<String>,
        tokens: Vec<Vec<u8>>,
        special: &[TokenId],
        eos: TokenId,
    ) -> Result<Self, VocabError> {
        if eos as usize >= tokens.len() {
            return Err(VocabError::NoEos {
                tried: vec![format!("id {eos}")],
            });
        }
        let mut is_special: Vec<bool> = tokens.iter().map(|t| t.is_empty()).collect();
        for &s in special {
            if let Some(x) = is_special.get_mut(s as usize) {
                *x = true;
            }
        }
        is_special[eos as usize] = true;
        let mut by_bytes = HashMap::new();
        let mut max_len = 0;
        for (i, t) in tokens.iter().enumerate() {
            if !is_special[i] {
                by_bytes.entry(t.clone()).or_insert(i as TokenId);
                max_len = max_len.max(t.len());
            }
        }
        Ok(Self::assemble(
            name.into(),
            tokens,
            is_special,
            eos,
            Encoder::Greedy { by_bytes, max_len },
        ))
    }

    /// The byte-level vocabulary: token `b` is the single byte `b` for
    /// `b < 256`, and token 256 is EOS.
    pub fn bytes() -> Self {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        tokens.push(Vec::new());
        // Infallible: 256 is a valid id of a 257-token vocabulary.
        Self::from_tokens("bytes", tokens, &[], 256).expect("byte vocabulary")
    }

    fn assemble(
        name: String,
        tokens: Vec<Vec<u8>>,
        special: Vec<bool>,
        eos: TokenId,
        encoder: Encoder,
    ) -> Self {
        let mut bytes = Vec::with_capacity(tokens.iter().map(Vec::len).sum());
        let mut offsets = Vec::with_capacity(tokens.len() + 1);
        offsets.push(0u32);
        for t in &tokens {
            bytes.extend_from_slice(t);
            offsets.push(bytes.len() as u32);
        }
        TokenVocab {
            name,
            bytes,
            offsets,
            special,
            eos,
            encoder,
        }
    }

    /// Loads one of the BPEs embedded in `tiktoken-rs`. EOS is
    /// `<|endoftext|>`; unused ids between the ordinary and the special tokens
    /// become special tokens with no bytes.
    pub fn tiktoken(bpe: TiktokenBpe) -> Result<Self, VocabError> {
        use tiktoken_rs as oa;
        let core = match bpe {
            TiktokenBpe::O200k => oa::o200k_base(),
            TiktokenBpe::Cl100k => oa::cl100k_base(),
            TiktokenBpe::R50k => oa::r50k_base(),
        }
        .map_err(|e| VocabError::Tiktoken(e.to_string()))?;
        let mut specials: Vec<(String, TokenId)> = Vec::new();
        for s in core.special_tokens() {
            let ids = core.encode_with_special_tokens(s);
            if let [id] = ids.as_slice() {
                specials.push((s.to_string(), *id));
            }
        }
        let max_special = specials.iter().map(|&(_, id)| id).max().unwrap_or(0);
        let mut tokens: Vec<Vec<u8>> = Vec::new();
        let mut special = Vec::new();
        // Ordinary ranks are dense from 0; stop at the first hole past them.
        let mut rank: TokenId = 0;
        loop {
            if specials.iter().any(|&(_, id)| id == rank) {
                break;
            }
            match core.decode_bytes(&[rank]) {
                Ok(b) => {
                    tokens.push(b);
                    special.push(false);
                    rank += 1;
                }
                Err(_) => break,
            }
        }
        let total = (max_special as usize + 1).max(tokens.len());
        tokens.resize(total, Vec::new());
        special.resize(total, true);
        let mut eos = None;
        for (s, id) in &specials {
            tokens[*id as usize] = Vec::new();
            special[*id as usize] = true;
            if s == "<|endoftext|>" {
                eos = Some(*id);
            }
        }
        let eos = eos.ok_or_else(|| VocabError::NoEos {
            tried: vec!["<|endoftext|>".into()],
        })?;
        Ok(Self::assemble(
            bpe.name().to_string(),
            tokens,
            special,
            eos,
            Encoder::Tiktoken(Arc::new(core)),
        ))
    }

    /// Loads a Hugging Face `tokenizer.json`. Byte-level BPE tokens are mapped
    /// back through the GPT-2 byte alphabet; SentencePiece tokens get `▁` as a
    /// space and `<0xHH>` byte-fallback tokens their single byte. Added tokens
    /// marked `special` are special. `eos` names the EOS token; when `None`,
    /// the first of `</s>`, `<|endoftext|>`, `<|im_end|>`, `<|eot_id|>`,
    /// `<eos>` that exists is used.
    pub fn from_hf_tokenizer_json(path: &Path, eos: Option<&str>) -> Result<Self, VocabError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| VocabError::Io {
            path: p.clone(),
            source,
        })?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "hf".into());
        Self::from_hf_tokenizer_str(&text, &p, &name, eos)
    }

    /// [`from_hf_tokenizer_json`](Self::from_hf_tokenizer_json) on the
    /// file's text, as a tokenizer object serialises it
    /// (`tokenizers.Tokenizer.to_str()`); `source` names it in errors,
    /// `name` is the vocabulary's [`name`](Self::name).
    pub fn from_hf_tokenizer_str(
        text: &str,
        source: &str,
        name: &str,
        eos: Option<&str>,
    ) -> Result<Self, VocabError> {
        let p = source.to_string();
        let json: serde_json::Value =
            serde_json::from_str(text).map_err(|e| VocabError::Format {
                path: p.clone(),
                reason: e.to_string(),
            })?;
        let tok =
            tokenizers::Tokenizer::from_bytes(text.as_bytes()).map_err(|e| VocabError::Format {
                path: p.clone(),
                reason: e.to_string(),
            })?;
        let byte_level = mentions_type(&json["pre_tokenizer"], "ByteLevel")
            || mentions_type(&json["decoder"], "ByteLevel");
        let vocab = tok.get_vocab(true);
        let n = vocab.values().map(|&i| i as usize + 1).max().unwrap_or(0);
        // Token ids size the tables below: bound them by the documented
        // maximum and by the file (every id is written in it, so a
        // vocabulary larger than the file is mostly holes).
        if n > MAX_VOCAB_TOKENS || n > text.len() {
            return Err(VocabError::Format {
                path: p,
                reason: format!(
                    "token id {} is above the supported maximum ({} tokens, and no more than the file's {} bytes)",
                    n - 1,
                    MAX_VOCAB_TOKENS,
                    text.len()
                ),
            });
        }
        let mut tokens = vec![Vec::new(); n];
        let mut special = vec![true; n];
        let added: HashMap<u32, bool> = tok
            .get_added_tokens_decoder()
            .iter()
            .map(|(&id, t)| (id, t.special))
            .collect();
        let unicode_to_byte = gpt2_unicode_to_byte();
        for (s, &id) in &vocab {
            let i = id as usize;
            if added.get(&id).copied().unwrap_or(false) {
                continue; // special added token: no text bytes
            }
            let bytes = if added.contains_key(&id) {
                s.as_bytes().to_vec() // non-special added token: literal text
            } else if byte_level {
                let mut out = Vec::with_capacity(s.len());
                for c in s.chars() {
                    match unicode_to_byte.get(&c) {
                        Some(&b) => out.push(b),
                        None => {
                            return Err(VocabError::Format {
                                path: p,
                                reason: format!(
                                    "token {s:?} has {c:?}, not in the byte-level alphabet"
                                ),
                            })
                        }
                    }
                }
                out
            } else if let Some(b) = byte_fallback(s) {
                vec![b]
            } else {
                s.replace('\u{2581}', " ").into_bytes()
            };
            special[i] = bytes.is_empty();
            tokens[i] = bytes;
        }
        let candidates: Vec<String> = match eos {
            Some(e) => vec![e.to_string()],
            None => ["</s>", "<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<eos>"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        let eos_id = candidates
            .iter()
            .find_map(|c| vocab.get(c).copied())
            .ok_or(VocabError::NoEos { tried: candidates })?;
        tokens[eos_id as usize] = Vec::new();
        special[eos_id as usize] = true;
        Ok(Self::assemble(
            name.to_string(),
            tokens,
            special,
            eos_id,
            Encoder::Hf(Arc::new(tok)),
        ))
    }

    /// Name of the vocabulary (`o200k_base`, `bytes`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Encodes text as ordinary tokens (special-token text is not special).
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>, VocabError> {
        match &self.encoder {
            Encoder::Tiktoken(core) => Ok(core.encode_ordinary(text)),
            Encoder::Hf(tok) => tok
                .encode(text, false)
                .map(|e| e.get_ids().to_vec())
                .map_err(|e| VocabError::Encode(e.to_string())),
            Encoder::Greedy { by_bytes, max_len } => {
                let b = text.as_bytes();
                let mut out = Vec::new();
                let mut i = 0;
                'outer: while i < b.len() {
                    for l in (1..=(*max_len).min(b.len() - i)).rev() {
                        if let Some(&t) = by_bytes.get(&b[i..i + l]) {
                            out.push(t);
                            i += l;
                            continue 'outer;
                        }
                    }
                    return Err(VocabError::Encode(format!(
                        "byte {:#04x} at offset {i} is not covered by any token",
                        b[i]
                    )));
                }
                Ok(out)
            }
        }
    }

    /// Concatenated bytes of a token sequence.
    pub fn decode(&self, ids: &[TokenId]) -> Vec<u8> {
        ids.iter()
            .flat_map(|&t| self.token_bytes(t).iter().copied())
            .collect()
    }

    /// The id of an exact token string, if one token has exactly these bytes.
    pub fn find(&self, bytes: &[u8]) -> Option<TokenId> {
        (0..self.len() as TokenId)
            .find(|&t| !self.special[t as usize] && self.token_bytes(t) == bytes)
    }

    /// The id of a special (control) token by its text, e.g. `<|im_end|>`.
    pub fn find_special(&self, text: &str) -> Option<TokenId> {
        (0..self.len() as TokenId)
            .find(|&t| self.special[t as usize] && self.token_bytes(t) == text.as_bytes())
    }

    /// Number of non-special tokens.
    pub fn num_ordinary(&self) -> usize {
        self.special.iter().filter(|s| !**s).count()
    }

    /// Heap bytes used by the token table.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.offsets.capacity() * 4 + self.special.capacity()
    }
}

impl Vocabulary for TokenVocab {
    fn len(&self) -> usize {
        self.special.len()
    }
    #[inline]
    fn token_bytes(&self, t: TokenId) -> &[u8] {
        let t = t as usize;
        match (self.offsets.get(t), self.offsets.get(t + 1)) {
            (Some(&a), Some(&b)) => &self.bytes[a as usize..b as usize],
            _ => &[],
        }
    }
    fn eos(&self) -> TokenId {
        self.eos
    }
    fn is_special(&self, t: TokenId) -> bool {
        self.special.get(t as usize).copied().unwrap_or(true)
    }
}

/// How a tokenizer writes a token's bytes as text in its vocabulary (the
/// `vocab_type` of XGrammar's `TokenizerInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenText {
    /// The text is the token's bytes (UTF-8).
    Raw,
    /// SentencePiece: `▁` is a space and `<0xHH>` the single byte `HH`.
    ByteFallback,
    /// GPT-2's byte-level alphabet (`Ġ` for a space, …), every character
    /// one byte.
    ByteLevel,
}

/// The bytes a vocabulary entry written as `kind` stands for; `None` when
/// a [`TokenText::ByteLevel`] entry has a character outside GPT-2's byte
/// alphabet. O(|s|) (the byte-level table is built once per process).
pub fn decode_token_text(s: &str, kind: TokenText) -> Option<Vec<u8>> {
    match kind {
        TokenText::Raw => Some(s.as_bytes().to_vec()),
        TokenText::ByteFallback => Some(match byte_fallback(s) {
            Some(b) => vec![b],
            None => s.replace('\u{2581}', " ").into_bytes(),
        }),
        TokenText::ByteLevel => {
            static TABLE: std::sync::OnceLock<HashMap<char, u8>> = std::sync::OnceLock::new();
            let table = TABLE.get_or_init(gpt2_unicode_to_byte);
            s.chars().map(|c| table.get(&c).copied()).collect()
        }
    }
}

fn mentions_type(v: &serde_json::Value, ty: &str) -> bool {
    match v {
        serde_json::Value::Object(m) => {
            m.get("type").and_then(|t| t.as_str()) == Some(ty)
                || m.values().any(|x| mentions_type(x, ty))
        }
        serde_json::Value::Array(a) => a.iter().any(|x| mentions_type(x, ty)),
        _ => false,
    }
}

/// `<0xHH>` → the byte `HH` (SentencePiece byte fallback).
fn byte_fallback(s: &str) -> Option<u8> {
    let hex = s.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() == 2 {
        u8::from_str_radix(hex, 16).ok()
    } else {
        None
    }
}

/// The inverse of GPT-2's `bytes_to_unicode`: printable Latin-1 bytes map to
/// themselves, the rest to code points from U+0100 up, in byte order.
fn gpt2_unicode_to_byte() -> HashMap<char, u8> {
    let mut map = HashMap::with_capacity(256);
    let mut n = 0u32;
    for b in 0..=255u8 {
        let printable =
            (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b);
        let c = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(256 + n).unwrap_or('\u{FFFD}');
            n += 1;
            c
        };
        map.insert(c, b);
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_text_decodes_each_vocab_type() {
        assert_eq!(
            decode_token_text("Ġhello", TokenText::ByteLevel).unwrap(),
            b" hello"
        );
        assert_eq!(decode_token_text("Ċ", TokenText::ByteLevel).unwrap(), b"\n");
        assert_eq!(
            decode_token_text("é", TokenText::ByteLevel).unwrap(),
            [0xE9]
        );
        assert_eq!(decode_token_text("\u{4e00}", TokenText::ByteLevel), None);
        assert_eq!(
            decode_token_text("<0x0A>", TokenText::ByteFallback).unwrap(),
            b"\n"
        );
        assert_eq!(
            decode_token_text("▁the", TokenText::ByteFallback).unwrap(),
            b" the"
        );
        assert_eq!(
            decode_token_text("▁the", TokenText::Raw).unwrap(),
            "▁the".as_bytes()
        );
    }

    fn check_round_trip(v: &TokenVocab, text: &str) {
        let ids = v.encode(text).unwrap();
        assert_eq!(v.decode(&ids), text.as_bytes(), "{}", v.name());
        for &t in &ids {
            assert!(!v.is_special(t));
        }
    }

    #[test]
    fn tiktoken_vocabularies_have_exact_bytes() {
        for (bpe, min_len) in [
            (TiktokenBpe::O200k, 199_998),
            (TiktokenBpe::Cl100k, 100_000),
            (TiktokenBpe::R50k, 50_000),
        ] {
            let v = TokenVocab::tiktoken(bpe).unwrap();
            assert!(v.len() >= min_len, "{} has {}", v.name(), v.len());
            assert!(v.is_special(v.eos()));
            assert!(v.token_bytes(v.eos()).is_empty());
            check_round_trip(
                &v,
                "{\"name\": \"Zürich\", \"n\": [1, 2.5e3, null]}\n\t€ 日本語 🙂",
            );
            // every single byte is a token in these BPEs
            for b in 0..=255u8 {
                assert!(v.find(&[b]).is_some(), "byte {b} missing from {}", v.name());
            }
        }
    }

    #[test]
    fn o200k_eos_and_holes() {
        let v = TokenVocab::tiktoken(TiktokenBpe::O200k).unwrap();
        assert_eq!(v.eos(), 199_999);
        assert_eq!(v.len(), 200_019);
        assert!(v.is_special(200_005)); // an unused id
    }

    #[test]
    fn byte_vocab() {
        let v = TokenVocab::bytes();
        assert_eq!(v.len(), 257);
        assert_eq!(v.eos(), 256);
        check_round_trip(&v, "héllo");
    }

    #[test]
    fn greedy_encoder_reports_uncovered_bytes() {
        let v = TokenVocab::from_tokens("ab", vec![b"a".to_vec(), b"ab".to_vec(), vec![]], &[], 2)
            .unwrap();
        assert_eq!(v.encode("aab").unwrap(), vec![0, 1]);
        assert!(matches!(v.encode("ac"), Err(VocabError::Encode(_))));
    }

    fn write_tmp(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("zapspec-core-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("tokenizer.json");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn hf_byte_level_bpe() {
        // GPT-2 style: "Ġ" is the space byte, "Ċ" the newline byte.
        let json = r#"{"version":"1.0","truncation":null,"padding":null,
          "added_tokens":[{"id":9,"content":"<|endoftext|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
          "normalizer":null,
          "pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
          "post_processor":null,
          "decoder":{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true},
          "model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,
            "vocab":{"a":0,"b":1,"Ġ":2,"Ċ":3,"ab":4,"Ġa":5,"Ġab":6,"é":7,"Ã":8},
            "merges":["a b","Ġ a","Ġa b"]}}"#;
        let v = TokenVocab::from_hf_tokenizer_json(&write_tmp("bl", json), None).unwrap();
        assert_eq!(v.eos(), 9);
        assert_eq!(v.token_bytes(2), b" ");
        assert_eq!(v.token_bytes(3), b"\n");
        assert_eq!(v.token_bytes(6), b" ab");
        assert_eq!(v.token_bytes(7), &[0xE9]); // 'é' is printable Latin-1: byte 0xE9
        let ids = v.encode("ab ab\n").unwrap();
        assert_eq!(v.decode(&ids), b"ab ab\n");
        assert_eq!(ids, vec![4, 2, 4, 3]); // "a b" outranks "Ġ a", so " ab" splits
    }

    #[test]
    fn hf_sentencepiece_byte_fallback() {
        let json = r#"{"version":"1.0","truncation":null,"padding":null,
          "added_tokens":[{"id":0,"content":"<unk>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
                          {"id":1,"content":"</s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
          "normalizer":{"type":"Replace","pattern":{"String":" "},"content":"▁"},
          "pre_tokenizer":null,"post_processor":null,
          "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]},
          "model":{"type":"BPE","dropout":null,"unk_token":"<unk>","continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":true,"byte_fallback":true,
            "vocab":{"<unk>":0,"</s>":1,"<0x0A>":2,"<0xC3>":3,"<0xA9>":4,"▁":5,"a":6,"b":7,"▁a":8,"ab":9,"▁ab":10},
            "merges":["▁ a","a b","▁a b"]}}"#;
        let v = TokenVocab::from_hf_tokenizer_json(&write_tmp("sp", json), None).unwrap();
        assert_eq!(v.eos(), 1);
        assert!(v.is_special(0));
        assert_eq!(v.token_bytes(2), b"\n");
        assert_eq!(v.token_bytes(3), &[0xC3]);
        assert_eq!(v.token_bytes(10), b" ab");
        let ids = v.encode("ab é").unwrap();
        assert_eq!(v.decode(&ids), "ab é".as_bytes());
        assert_eq!(ids, vec![9, 5, 3, 4]); // "é" falls back to its two UTF-8 bytes
    }

    #[test]
    fn hf_errors_are_reported() {
        let p = write_tmp("bad", "{ not json");
        assert!(matches!(
            TokenVocab::from_hf_tokenizer_json(&p, None),
            Err(VocabError::Format { .. })
        ));
        assert!(matches!(
            TokenVocab::from_hf_tokenizer_json(Path::new("/nonexistent/tokenizer.json"), None),
            Err(VocabError::Io { .. })
        ));
    }
}
