//! A model loaded by path with its tokenizer and chat template, ready for
//! [`crate::Builder`] (the `models` feature, on by default).
//!
//! | path | loads |
//! |---|---|
//! | a `.gguf` file | a Llama-architecture GGUF (e.g. SmolLM2 `Q4_1`): weights ([`zapspec_backend::load_gguf`]), tokenizer and ChatML template from its metadata |
//! | a directory with `config.json` + `model.safetensors` | a Hugging Face checkpoint ([`zapspec_backend::load_causal`]); tokenizer from `tokenizer.json` (chat template from `tokenizer_config.json`), or the byte vocabulary when the directory has no tokenizer and the model scores 257 tokens (the shipped `models/causal-bytes`) |
//!
//! Cost: reading the weights (SmolLM2-135M `Q4_1`: ~0.1 s and ~100 MB,
//! kept quantised for the native CPU forward by default; 540 MB dequantised
//! to f32) and the vocabulary (49k tokens: tens of ms).
//! Nothing is downloaded.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use zapspec_backend::{load_causal, load_gguf, CausalLm, GgufOptions, GgufWeights, NativeOptions};
use zapspec_core::{LanguageModel, Vocabulary};
use zapspec_earley::{EarleyMatcher, Engine, EngineConfig};
use zapspec_phi::Uniform;
use zapspec_verify::NoDraft;
use zapspec_vocab::{ChatMl, TokenVocab};

use crate::{Builder, Error, Tokenizer};

/// How [`Model::load_with`] loads a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Where it runs ([`zapspec_backend::Backend`]: `Cpu` by default).
    pub backend: zapspec_backend::Backend,
    /// GGUF weights held quantised for the native CPU forward (the
    /// default, and the faster) or dequantised to f32 on candle (see
    /// [`GgufWeights`]).
    pub gguf_weights: GgufWeights,
    /// Caps a GGUF model's context window (and its RoPE tables); `None`:
    /// the file's value.
    pub max_context: Option<usize>,
    /// Threads and instruction set of the native quantised forward
    /// ([`GgufWeights::Quantized`], the default for GGUF files); threads
    /// 0: `RAYON_NUM_THREADS` if set, else every core.
    pub native: NativeOptions,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            backend: zapspec_backend::Backend::Cpu,
            gguf_weights: GgufWeights::default(),
            max_context: Some(8192),
            native: NativeOptions::default(),
        }
    }
}

/// A causal LM with its tokenizer (and chat template, when it has one).
#[derive(Clone)]
pub struct Model {
    /// The model (empty context); cloning it shares the weights.
    pub lm: CausalLm,
    /// Its tokenizer.
    pub tokenizer: Tokenizer,
    /// Where it was loaded from.
    pub path: PathBuf,
    /// The grammar engine of the vocabulary, built on first use and shared
    /// by clones.
    engine: Arc<OnceLock<Engine>>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("path", &self.path)
            .field("vocab", &self.tokenizer.vocab().name())
            .field("vocab_size", &self.lm.vocab_size())
            .field("chat", &self.tokenizer.chat().is_some())
            .finish()
    }
}

impl Model {
    /// Loads a model by path with [`LoadOptions::default`] (see the
    /// module docs for the layouts read).
    pub fn load(path: impl AsRef<Path>) -> Result<Model, Error> {
        Self::load_with(path, &LoadOptions::default())
    }

    /// Loads a model by path.
    pub fn load_with(path: impl AsRef<Path>, opts: &LoadOptions) -> Result<Model, Error> {
        let path = path.as_ref();
        let device = opts.backend.device()?;
        let (lm, tokenizer) = if path.is_file() {
            let (vocab, info) = TokenVocab::from_gguf(path)?;
            let lm = load_gguf(
                path,
                &device,
                &GgufOptions {
                    weights: opts.gguf_weights,
                    max_context: opts.max_context,
                    native: opts.native,
                },
            )?;
            let tok = Tokenizer::new(Arc::new(vocab));
            let tok = match ChatMl::from_gguf_info(&info) {
                Ok(chat) => tok.with_chat(chat),
                Err(_) => tok,
            };
            (lm, tok)
        } else if path.join("config.json").is_file() {
            let lm = load_causal(path, &device)?;
            let tok = Self::dir_tokenizer(path, lm.vocab_size())?;
            (lm, tok)
        } else {
            return Err(Error::Config(format!(
                "{}: neither a GGUF file nor a checkpoint directory with config.json",
                path.display()
            )));
        };
        if lm.vocab_size() != tokenizer.vocab().len() {
            return Err(Error::Config(format!(
                "{}: the model scores {} tokens, its tokenizer has {}",
                path.display(),
                lm.vocab_size(),
                tokenizer.vocab().len()
            )));
        }
        Ok(Model {
            lm,
            tokenizer,
            path: path.to_path_buf(),
            engine: Arc::default(),
        })
    }

    /// The tokenizer of a checkpoint directory.
    fn dir_tokenizer(dir: &Path, vocab_size: usize) -> Result<Tokenizer, Error> {
        let tj = dir.join("tokenizer.json");
        if !tj.is_file() {
            let bytes = TokenVocab::bytes();
            if bytes.len() == vocab_size {
                return Ok(Tokenizer::new(Arc::new(bytes)));
            }
            return Err(Error::Config(format!(
                "{}: no tokenizer.json, and the model scores {vocab_size} tokens, not the {} of the byte vocabulary",
                dir.display(),
                bytes.len()
            )));
        }
        let vocab = TokenVocab::from_hf_tokenizer_json(&tj, None)?;
        let template = std::fs::read_to_string(dir.join("tokenizer_config.json"))
            .ok()
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .and_then(|v| v.get("chat_template")?.as_str().map(str::to_string));
        let chat = template
            .filter(|t| t.contains("<|im_start|>"))
            .and_then(|t| ChatMl::from_vocab(&vocab, Some(&t)).ok());
        let tok = Tokenizer::new(Arc::new(vocab));
        Ok(match chat {
            Some(c) => tok.with_chat(c),
            None => tok,
        })
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Arc<TokenVocab> {
        self.tokenizer.vocab()
    }

    /// The grammar engine of this model's vocabulary (its vocabulary index:
    /// token trie, slices, the context-independent mask cache), built on
    /// the first call — tens of ms for a 50k vocabulary — and shared by
    /// every constraint this model (or a clone of it) builds.
    pub fn engine(&self) -> &Engine {
        self.engine
            .get_or_init(|| Engine::new(self.vocab().clone()))
    }

    /// The Earley matcher of JSON documents valid under `schema`, over this
    /// model's vocabulary: [`crate::compile_json_schema`] with
    /// [`crate::json_schema_options`] on [`Model::engine`].
    pub fn json_schema(&self, schema: &serde_json::Value) -> Result<EarleyMatcher, Error> {
        let cg = crate::compile_json_schema(
            self.engine(),
            schema,
            &crate::json_schema_options(),
            EngineConfig::default(),
        )?;
        Ok(cg.matcher())
    }

    /// [`Model::json_schema`] of a schema given as JSON text (invalid JSON
    /// is [`Error::Json`] with its line and column).
    pub fn json_schema_str(&self, schema: &str) -> Result<EarleyMatcher, Error> {
        self.json_schema(&crate::parse_json(schema)?)
    }

    /// The Earley matcher of a GBNF grammar over this model's vocabulary
    /// ([`crate::compile_gbnf`] on [`Model::engine`]).
    pub fn gbnf(&self, src: &str) -> Result<EarleyMatcher, Error> {
        Ok(crate::compile_gbnf(self.engine(), src, EngineConfig::default())?.matcher())
    }

    /// The Earley matcher of `family`'s tool calls for `tools` under
    /// `opts` over this model's vocabulary ([`crate::compile_tool_calls`]
    /// on [`Model::engine`]): SmolLM2 writes the Hermes/Qwen `<tool_call>`
    /// format, `"qwen_3"`.
    pub fn tool_calls(
        &self,
        family: &str,
        tools: &[crate::Tool],
        opts: &crate::ToolCallOptions,
    ) -> Result<EarleyMatcher, Error> {
        Ok(
            crate::compile_tool_calls(self.engine(), family, tools, opts, EngineConfig::default())?
                .matcher(),
        )
    }

    /// A [`Builder`] of this model (a clone: the weights are shared) under
    /// `constraint`, with its tokenizer set, so the pipeline takes text and
    /// chat prompts and returns text. Use [`crate::Unconstrained::new`]
    /// (with [`Model::eos`]) for free generation.
    pub fn builder<C>(&self, constraint: C) -> Builder<CausalLm, C, NoDraft, Uniform> {
        Builder::new(self.lm.clone(), constraint).tokenizer(self.tokenizer.clone())
    }

    /// The end-of-sequence token (for a chat model, the end of the
    /// assistant's turn).
    pub fn eos(&self) -> zapspec_core::TokenId {
        self.vocab().eos()
    }
}
