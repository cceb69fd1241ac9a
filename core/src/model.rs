//! The model traits: [`LanguageModel`] (autoregressive target or draft) and
//! [`DiffusionModel`] (masked diffusion LM, block-wise). A seeded toy model,
//! a trained model on CPU and a CUDA model are interchangeable behind them.

use std::ops::Range;

use crate::vocab::TokenId;

/// Logits, one row per position, one column per token.
pub type Logits = ndarray::Array2<f32>;

/// Errors from running a model. Bad input (ids outside the vocabulary, a
/// context past the model's window, a broken checkpoint) is reported here,
/// never by a panic.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A token id at or past the model's vocabulary size.
    #[error("token {token} is outside the model's vocabulary of {vocab_size}")]
    TokenOutOfRange {
        /// The offending id.
        token: TokenId,
        /// The model's vocabulary size.
        vocab_size: usize,
    },
    /// The context would grow past the model's maximum sequence length.
    #[error("context of {len} tokens exceeds the model's window of {max}")]
    ContextOverflow {
        /// Context length (tokens) the call would reach.
        len: usize,
        /// The model's window (tokens).
        max: usize,
    },
    /// A block range that does not lie inside the sequence.
    #[error("block {start}..{end} is outside a sequence of {len} tokens")]
    BadBlock {
        /// First position of the block.
        start: usize,
        /// One past the last position of the block.
        end: usize,
        /// Length of the sequence (tokens).
        len: usize,
    },
    /// A draft whose length differs from the block it fills.
    #[error("draft {index} has {got} tokens, the block has {want}")]
    DraftLength {
        /// Index of the draft in the batch.
        index: usize,
        /// Its length (tokens).
        got: usize,
        /// The block length (tokens).
        want: usize,
    },
    /// A checkpoint that cannot be read or does not fit the model.
    #[error("checkpoint {path}: {reason}")]
    Checkpoint {
        /// The checkpoint's file path.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A failure inside the compute backend (device, kernel, tensor shape).
    #[error("backend: {0}")]
    Backend(String),
    /// The model is a placeholder that runs no forward passes (e.g.
    /// `zapspec_phi::NoModel`, which only states a vocabulary size).
    #[error("{0} runs no forward passes")]
    NoForward(&'static str),
}

/// An autoregressive language model with a KV cache over its context.
///
/// The context starts empty (models that need a BOS token add it
/// internally); [`prefill`](LanguageModel::prefill) appends tokens in one
/// forward pass; [`truncate`](LanguageModel::truncate) drops cache entries
/// after a rejected speculative draft.
pub trait LanguageModel {
    /// Number of tokens the model scores.
    fn vocab_size(&self) -> usize;

    /// The tokens currently in the context, oldest first.
    fn context(&self) -> &[TokenId];

    /// Appends `tokens` to the context in one forward pass. Row `i` of the
    /// result holds the logits of the token that follows
    /// `context ++ tokens[..=i]`; an empty `tokens` gives zero rows.
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError>;

    /// Logits of the next token after the current context (for an empty
    /// context: the first token's).
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError>;

    /// Keeps the first `len` context tokens and drops the rest.
    fn truncate(&mut self, len: usize);

    /// The longest context the model accepts.
    fn max_context(&self) -> usize {
        usize::MAX
    }

    /// Sets the context to `ctx`, reusing the longest common prefix with the
    /// current one, and returns the next-token logits.
    fn logits_for(&mut self, ctx: &[TokenId]) -> Result<Vec<f32>, ModelError> {
        let cur = self.context();
        let common = cur.iter().zip(ctx).take_while(|(a, b)| a == b).count();
        if common == ctx.len() && common == cur.len() {
            return self.next_logits();
        }
        self.truncate(common);
        let rows = self.prefill(&ctx[common..])?;
        match rows.nrows() {
            0 => self.next_logits(),
            n => Ok(rows.row(n - 1).to_vec()),
        }
    }
}

/// What one denoising call returns: logits for every position of the block,
/// for the true sequence and for each draft block.
#[derive(Debug, Clone)]
pub struct BlockMarginals {
    /// Shape `(block.len(), vocab)`: the block as it stands in `seq`.
    pub main: Logits,
    /// One per draft, same shape: the block with that draft written into it.
    pub drafts: Vec<Logits>,
}

/// A masked diffusion language model decoded block by block.
pub trait DiffusionModel {
    /// Number of tokens the model scores (the mask token included).
    fn vocab_size(&self) -> usize;

    /// The token that marks a position still to be denoised.
    fn mask_token(&self) -> TokenId;

    /// One function evaluation (NFE): logits for every position of `block`
    /// in `seq`, and — in the same call, as Spiffy's draft-block attention
    /// mask allows — for the block with each of `drafts` written into it
    /// (each draft has `block.len()` tokens, mask tokens allowed).
    fn denoise(
        &mut self,
        seq: &[TokenId],
        block: Range<usize>,
        drafts: &[Vec<TokenId>],
    ) -> Result<BlockMarginals, ModelError>;

    /// Number of [`denoise`](DiffusionModel::denoise) calls so far.
    fn nfe(&self) -> usize;
}

/// Checks the arguments of [`DiffusionModel::denoise`]; implementations call
/// it first.
pub fn check_denoise_args(
    seq: &[TokenId],
    block: &Range<usize>,
    drafts: &[Vec<TokenId>],
    vocab_size: usize,
) -> Result<(), ModelError> {
    if block.start > block.end || block.end > seq.len() {
        return Err(ModelError::BadBlock {
            start: block.start,
            end: block.end,
            len: seq.len(),
        });
    }
    for (index, d) in drafts.iter().enumerate() {
        if d.len() != block.len() {
            return Err(ModelError::DraftLength {
                index,
                got: d.len(),
                want: block.len(),
            });
        }
    }
    for &token in seq.iter().chain(drafts.iter().flatten()) {
        if token as usize >= vocab_size {
            return Err(ModelError::TokenOutOfRange { token, vocab_size });
        }
    }
    Ok(())
}
