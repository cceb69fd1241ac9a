//! A model that records its context and returns one-column zero logits:
//! cheap over any vocabulary, for executors that read no logits
//! (`CopyDecoder::execute_output`, teacher-forced).

use zapspec_core::model::{LanguageModel, Logits, ModelError};
use zapspec_core::TokenId;

/// Records its context and counts forwards.
#[derive(Default)]
pub struct CtxLm {
    /// The context.
    pub ctx: Vec<TokenId>,
    /// `prefill` and `next_logits` calls.
    pub forwards: usize,
}

impl LanguageModel for CtxLm {
    fn vocab_size(&self) -> usize {
        1
    }
    fn context(&self) -> &[TokenId] {
        &self.ctx
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        self.forwards += 1;
        self.ctx.extend_from_slice(tokens);
        Ok(Logits::zeros((tokens.len(), 1)))
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        self.forwards += 1;
        Ok(vec![0.0])
    }
    fn truncate(&mut self, len: usize) {
        self.ctx.truncate(len);
    }
}
