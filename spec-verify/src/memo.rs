//! [`MemoLm`]: a [`LanguageModel`] wrapper that memoises next-token logits
//! by context. Deterministic toy models over a finite language revisit the
//! same few thousand prefixes millions of times in the sampling experiments;
//! memoising turns each revisit into a hash lookup without changing a single
//! logit. The loop still drives the wrapper through `prefill`/`truncate`.
//! [`MemoLm::with_table`] also serves a precomputed table of rows shared
//! between wrappers (rows a batched scoring pass produced, e.g. over a
//! finite language's prefix tree), asking the inner model only for other
//! contexts.

use std::collections::HashMap;
use std::sync::Arc;

use ndarray::Array2;
use zapspec_core::{LanguageModel, Logits, ModelError, TokenId};

/// Next-token logits by whole context (a row per context).
pub type LogitTable = HashMap<Vec<TokenId>, Arc<[f32]>>;

/// Memoising wrapper; see the module docs. Only for deterministic models.
pub struct MemoLm<M> {
    inner: M,
    /// Rows consulted before the cache, shared and never written.
    table: Option<Arc<LogitTable>>,
    cache: LogitTable,
    context: Vec<TokenId>,
    calls: usize,
    misses: usize,
}

impl<M: LanguageModel> MemoLm<M> {
    /// Wraps `inner` with an empty cache.
    pub fn new(inner: M) -> Self {
        MemoLm {
            inner,
            table: None,
            cache: HashMap::new(),
            context: Vec::new(),
            calls: 0,
            misses: 0,
        }
    }

    /// Wraps `inner`, serving the rows of `table` (keyed by the whole
    /// context) before asking it; a row must hold one logit per token of
    /// the vocabulary (`prefill` says so with an error otherwise).
    pub fn with_table(table: Arc<LogitTable>, inner: M) -> Self {
        MemoLm {
            table: Some(table),
            ..MemoLm::new(inner)
        }
    }

    /// Forward calls made through this wrapper (`prefill` + `next_logits`).
    pub fn calls(&self) -> usize {
        self.calls
    }

    /// Contexts the inner model actually had to score.
    pub fn misses(&self) -> usize {
        self.misses
    }

    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    fn lookup(&mut self, ctx: &[TokenId]) -> Result<Arc<[f32]>, ModelError> {
        let table = self.table.as_ref().and_then(|t| t.get(ctx));
        if let Some(l) = table.or_else(|| self.cache.get(ctx)) {
            return Ok(l.clone());
        }
        self.misses += 1;
        let l: Arc<[f32]> = self.inner.logits_for(ctx)?.into();
        self.cache.insert(ctx.to_vec(), l.clone());
        Ok(l)
    }
}

impl<M: LanguageModel> LanguageModel for MemoLm<M> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn context(&self) -> &[TokenId] {
        &self.context
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        let v = self.inner.vocab_size();
        if let Some(&token) = tokens.iter().find(|&&t| t as usize >= v) {
            return Err(ModelError::TokenOutOfRange {
                token,
                vocab_size: v,
            });
        }
        self.calls += 1;
        let mut out = Array2::zeros((tokens.len(), v));
        let mut ctx = std::mem::take(&mut self.context);
        let start = ctx.len();
        for (i, &t) in tokens.iter().enumerate() {
            ctx.push(t);
            match self.lookup(&ctx) {
                Ok(l) if l.len() == v => out.row_mut(i).assign(&ndarray::ArrayView1::from(&l[..])),
                Ok(l) => {
                    ctx.truncate(start);
                    self.context = ctx;
                    return Err(ModelError::Backend(format!(
                        "a table row of {} logits (vocabulary {v})",
                        l.len()
                    )));
                }
                Err(e) => {
                    ctx.truncate(start);
                    self.context = ctx;
                    return Err(e);
                }
            }
        }
        self.context = ctx;
        Ok(out)
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        self.calls += 1;
        let ctx = self.context.clone();
        Ok(self.lookup(&ctx)?.to_vec())
    }
    fn truncate(&mut self, len: usize) {
        self.context.truncate(len);
    }
    fn max_context(&self) -> usize {
        self.inner.max_context()
    }
}
