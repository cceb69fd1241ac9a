//! The baselines Copy-as-Decode is raced against: full autoregressive
//! regeneration ([`regenerate`]) and prompt-lookup (n-gram) speculative
//! decoding with greedy verification ([`prompt_lookup`], what vLLM's
//! `ngram` speculator does). Both run on a [`CountingModel`], so their
//! forwards are counted exactly as `zapspec_copy`'s executors count theirs
//! ([`ExecStats`]); wall-clock is the caller's ([`super::timing`]).
//!
//! Forwards, with an unbounded window: regeneration of `D′` (`T` tokens)
//! costs `T`; prompt lookup costs one per round, each round appending the
//! token chosen from the previous logits plus a draft of up to
//! [`LookupConfig::num_draft`] tokens, of which the matching prefix is
//! kept (the rest is truncated from the cache); plus, for both, the
//! prompt's own forward ([`ExecStats::prompt_forwards`]; with an empty
//! prompt, one `next_logits` call instead). Prompt lookup's draft search
//! is `O(|prompt + output| · max_ngram)` per round.
//!
//! A [`Target`] says what they decode towards: teacher-forced on `D′` (a
//! model whose greedy output is `D′`, the same idealisation as oracle
//! programs) or the model's own greedy output.

use zapspec_copy::{CountingModel, ExecConfig, ExecError, ExecStats, Execution};
use zapspec_core::model::LanguageModel;
use zapspec_core::{TokenId, Vocabulary};

/// What a baseline decodes towards.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// Teacher-forced: the model's choice at each step is the next token
    /// of this sequence (then EOS).
    Teacher(&'a [TokenId]),
    /// The model's own greedy choice, until `eos` or `max_new` tokens.
    Greedy {
        /// The end-of-sequence token.
        eos: TokenId,
        /// Most tokens to generate.
        max_new: usize,
    },
}

/// Index of the largest logit (ties: lowest id).
fn argmax(logits: &[f32]) -> Option<TokenId> {
    let mut best: Option<(TokenId, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if best.is_none_or(|(_, b)| l > b) {
            best = Some((i as TokenId, l));
        }
    }
    best.map(|(t, _)| t)
}

/// The target's choice given the logits after `produced` output tokens.
fn choose(target: Target<'_>, logits: &[f32], produced: usize) -> Option<TokenId> {
    match target {
        Target::Teacher(ts) => ts.get(produced).copied(),
        Target::Greedy { eos, max_new } => {
            if produced >= max_new {
                None
            } else {
                argmax(logits).filter(|&t| t != eos)
            }
        }
    }
}

fn decode<V: Vocabulary + ?Sized>(vocab: &V, ids: &[TokenId]) -> String {
    let bytes: Vec<u8> = ids
        .iter()
        .flat_map(|&t| vocab.token_bytes(t).iter().copied())
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn finish<V: Vocabulary + ?Sized>(vocab: &V, out: Vec<TokenId>, mut stats: ExecStats) -> Execution {
    stats.output_tokens = out.len();
    Execution {
        output: decode(vocab, &out),
        tokens: out,
        stats,
    }
}

/// Full autoregressive regeneration: one forward per output token (plus
/// the prompt's). Output tokens are returned; `output` is their lossy
/// UTF-8 text.
pub fn regenerate<M: LanguageModel + ?Sized, V: Vocabulary + ?Sized>(
    model: &mut M,
    vocab: &V,
    prompt: &[TokenId],
    target: Target<'_>,
    cfg: &ExecConfig,
) -> Result<Execution, ExecError> {
    let mut counted = CountingModel::new(model, cfg);
    let mut last = counted.prompt(prompt)?;
    let mut pending = Vec::new();
    let mut out = Vec::new();
    loop {
        let logits = counted.logits_or(&pending, &mut last)?;
        pending.clear();
        let Some(t) = choose(target, &logits, out.len()) else {
            break;
        };
        if out.len() >= cfg.max_tokens {
            return Err(ExecError::TokenLimit {
                max: cfg.max_tokens,
            });
        }
        out.push(t);
        pending.push(t);
        counted.stats_mut().decided += 1;
    }
    Ok(finish(vocab, out, counted.into_stats()))
}

/// Settings of [`prompt_lookup`] (defaults: vLLM's documented `ngram`
/// example, `num_speculative_tokens = 5`, `prompt_lookup_max = 4`, with
/// `prompt_lookup_min = 1`; not tuned here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupConfig {
    /// Longest n-gram matched (tried first).
    pub max_ngram: usize,
    /// Shortest n-gram matched.
    pub min_ngram: usize,
    /// Most draft tokens per round.
    pub num_draft: usize,
}

impl Default for LookupConfig {
    fn default() -> Self {
        LookupConfig {
            max_ngram: 4,
            min_ngram: 1,
            num_draft: 5,
        }
    }
}

/// The draft of prompt lookup: for `n` from `max_ngram` down to
/// `min_ngram`, the last `n` tokens of `seq` are searched for earlier in
/// `seq` (most recent occurrence first); the first hit's following tokens
/// (at most `num_draft`) are the draft. `O(|seq| · n)` per call.
pub fn lookup_draft(seq: &[TokenId], cfg: &LookupConfig) -> Vec<TokenId> {
    let len = seq.len();
    let hi = cfg.max_ngram.min(len.saturating_sub(1));
    for n in (cfg.min_ngram.max(1)..=hi).rev() {
        let pat = &seq[len - n..];
        // Occurrences ending before the suffix itself, most recent first.
        for s in (0..len - n).rev() {
            if &seq[s..s + n] == pat {
                let from = s + n;
                let to = (from + cfg.num_draft).min(len);
                if from < to {
                    return seq[from..to].to_vec();
                }
            }
        }
    }
    Vec::new()
}

/// Prompt-lookup speculative decoding with greedy verification: each
/// round appends the token chosen from the last logits plus an n-gram
/// draft from `prompt ++ output` ([`lookup_draft`]) in one forward, keeps
/// the draft's prefix that the target agrees with (teacher-forced: equal
/// to the next tokens of `D′`; greedy: the model's argmax), takes the
/// logits after the last kept token for the next round and truncates the
/// rejected tokens from the cache. Lossless: the output equals
/// [`regenerate`]'s for the same target.
pub fn prompt_lookup<M: LanguageModel + ?Sized, V: Vocabulary + ?Sized>(
    model: &mut M,
    vocab: &V,
    prompt: &[TokenId],
    target: Target<'_>,
    lookup: &LookupConfig,
    cfg: &ExecConfig,
) -> Result<Execution, ExecError> {
    let mut counted = CountingModel::new(model, cfg);
    let mut seq: Vec<TokenId> = prompt.to_vec();
    let p = prompt.len();
    let mut logits = match counted.prompt(prompt)? {
        Some(l) => l,
        None => counted.logits(&[])?,
    };
    while let Some(next) = choose(target, &logits, seq.len() - p) {
        if seq.len() - p >= cfg.max_tokens {
            return Err(ExecError::TokenLimit {
                max: cfg.max_tokens,
            });
        }
        seq.push(next);
        counted.stats_mut().decided += 1;
        let mut draft = lookup_draft(&seq, lookup);
        if let Target::Greedy { max_new, .. } = target {
            draft.truncate(max_new.saturating_sub(seq.len() - p));
        }
        counted.stats_mut().drafted += draft.len();
        let mut batch = Vec::with_capacity(draft.len() + 1);
        batch.push(next);
        batch.extend_from_slice(&draft);
        let rows = counted.forward(&batch, true)?;
        let mut kept = 0usize;
        while kept < draft.len() {
            let row = rows.get(kept).map(Vec::as_slice).unwrap_or(&[]);
            if choose(target, row, seq.len() - p) != Some(draft[kept]) {
                break;
            }
            seq.push(draft[kept]);
            kept += 1;
        }
        counted.stats_mut().accepted += kept;
        let rejected = draft.len() - kept;
        if rejected > 0 {
            counted.truncate_back(rejected);
        }
        logits = rows.get(kept).cloned().unwrap_or_default();
    }
    let out = seq[p..].to_vec();
    Ok(finish(vocab, out, counted.into_stats()))
}
