//! The empty constraint: every token allowed until EOS, for the
//! unconstrained baseline through the same loop.

use zapspec_core::{LookAhead, RejectReason, TokenId, TokenSet};

/// Allows every token of a vocabulary of `vocab_size` at every position
/// and is complete at every position, so EOS may end the sequence anywhere.
/// A [`zapspec_core::Matcher`], hence a [`zapspec_core::Constraint`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unconstrained {
    vocab_size: usize,
    eos: TokenId,
    steps: usize,
    finished: bool,
}

impl Unconstrained {
    /// Every token of `0..vocab_size` allowed; `eos` ends.
    pub fn new(vocab_size: usize, eos: TokenId) -> Self {
        Unconstrained {
            vocab_size,
            eos,
            steps: 0,
            finished: false,
        }
    }
}

impl zapspec_core::Matcher for Unconstrained {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }
    fn eos(&self) -> TokenId {
        self.eos
    }
    fn fill_next(&mut self, mask: &mut TokenSet) {
        mask.fill();
    }
    fn step(&mut self, t: TokenId) -> Result<(), RejectReason> {
        if t as usize >= self.vocab_size {
            return Err(RejectReason::OutOfVocabulary);
        }
        self.steps += 1;
        Ok(())
    }
    fn unstep(&mut self, n: usize) {
        self.steps -= n;
    }
    fn num_steps(&self) -> usize {
        self.steps
    }
    fn is_complete(&self) -> bool {
        true
    }
    fn finished(&self) -> bool {
        self.finished
    }
    fn set_finished(&mut self, finished: bool) {
        self.finished = finished;
    }
}

/// No look-ahead hooks: estimators fall back to forking.
impl LookAhead for Unconstrained {}
