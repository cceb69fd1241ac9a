//! Temperature as a model wrapper: `Tempered<M>` divides every logit of
//! `M` by `T` (softmax temperature), so the loop's laws — the masked
//! target, Φ̂'s inputs, the bonus token's law — are those of the tempered
//! model and nothing downstream knows about temperature. `T = 1` passes
//! the logits through untouched (bit for bit).

use zapspec_core::{DraftTree, LanguageModel, Logits, ModelError, TokenId};

/// A [`LanguageModel`] whose logits are those of `inner` divided by a
/// temperature.
#[derive(Debug, Clone)]
pub struct Tempered<M> {
    inner: M,
    inv_t: f32,
}

impl<M> Tempered<M> {
    /// Wraps `inner` at temperature `t` (finite, > 0; checked by the
    /// builder, which is the usual way in).
    pub fn new(inner: M, t: f64) -> Self {
        Tempered {
            inner,
            inv_t: (1.0 / t) as f32,
        }
    }
    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.inner
    }
    /// The wrapped model, mutably.
    pub fn inner_mut(&mut self) -> &mut M {
        &mut self.inner
    }
    /// The temperature.
    pub fn temperature(&self) -> f64 {
        1.0 / self.inv_t as f64
    }
    fn scale(&self, x: f32) -> f32 {
        x * self.inv_t
    }
}

impl<M: LanguageModel> LanguageModel for Tempered<M> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn context(&self) -> &[TokenId] {
        self.inner.context()
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        let mut rows = self.inner.prefill(tokens)?;
        if self.inv_t != 1.0 {
            rows.mapv_inplace(|x| self.scale(x));
        }
        Ok(rows)
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        let mut row = self.inner.next_logits()?;
        if self.inv_t != 1.0 {
            row.iter_mut().for_each(|x| *x = self.scale(*x));
        }
        Ok(row)
    }
    fn truncate(&mut self, len: usize) {
        self.inner.truncate(len)
    }
    /// The inner model's tree scoring (its one-forward tree attention, if
    /// it has one), scaled.
    fn tree_logits(&mut self, tree: &DraftTree) -> Result<Logits, ModelError> {
        let mut rows = self.inner.tree_logits(tree)?;
        if self.inv_t != 1.0 {
            rows.mapv_inplace(|x| self.scale(x));
        }
        Ok(rows)
    }
    fn max_context(&self) -> usize {
        self.inner.max_context()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_testkit::toy::BigramLm;

    #[test]
    fn tree_logits_are_the_inner_ones_tempered() {
        let tree = DraftTree::new(vec![None, Some(0), None], vec![1, 2, 0]).unwrap();
        let mut inner = BigramLm::new(4, 3);
        let want = inner.tree_logits(&tree).unwrap();
        let mut hot = Tempered::new(BigramLm::new(4, 3), 2.0);
        let got = hot.tree_logits(&tree).unwrap();
        assert_eq!(got, want.mapv(|x| x * 0.5));
    }
}
