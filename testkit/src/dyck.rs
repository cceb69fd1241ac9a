//! The bounded Dyck language `D_{d,L}` ([`DyckSpec`]) and its matcher
//! [`DyckConstraint`] — the languages of the future-validity paper's
//! experiments (App. G).

use zapspec_core::constraint::{Constraint, Rejected, RollbackError};
use zapspec_core::{TokenId, TokenSet};

/// The bounded Dyck language D: balanced strings over `kinds` bracket types
/// with nesting depth at most `max_depth` and length at most `max_len` (the
/// empty string included). With one kind, `D_{3,16}` (`max_depth` 3,
/// `max_len` 16) has 988 members and `D_{3,12}` has 145 — the languages of
/// the future-validity paper's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DyckSpec {
    pub kinds: usize,
    pub max_depth: usize,
    pub max_len: usize,
}

impl DyckSpec {
    /// Token `i < kinds` opens bracket kind `i`, token `kinds + i` closes it,
    /// token `2·kinds` is EOS.
    pub fn open(&self, kind: usize) -> TokenId {
        kind as TokenId
    }
    pub fn close(&self, kind: usize) -> TokenId {
        (self.kinds + kind) as TokenId
    }
    pub fn eos(&self) -> TokenId {
        (2 * self.kinds) as TokenId
    }
    pub fn vocab_size(&self) -> usize {
        2 * self.kinds + 1
    }
}

/// A [`Constraint`] for a [`DyckSpec`] language. It allows an opening
/// bracket only when the string can still be closed within `max_len`, so
/// every prefix it allows extends to a member (no dead ends).
#[derive(Debug, Clone)]
pub struct DyckConstraint {
    spec: DyckSpec,
    stack: Vec<u16>,
    history: Vec<TokenId>,
    finished: bool,
}

impl DyckConstraint {
    pub fn new(spec: DyckSpec) -> Self {
        DyckConstraint {
            spec,
            stack: Vec::new(),
            history: Vec::new(),
            finished: false,
        }
    }
    pub fn spec(&self) -> DyckSpec {
        self.spec
    }
    /// Current nesting depth.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }
    /// Brackets consumed (EOS excluded).
    pub fn len(&self) -> usize {
        self.history.len() - usize::from(self.finished)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn can_open(&self) -> bool {
        let d = self.stack.len();
        d < self.spec.max_depth && self.len() + d + 2 <= self.spec.max_len
    }
}

impl Constraint for DyckConstraint {
    fn vocab_size(&self) -> usize {
        self.spec.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.spec.eos()
    }
    fn fill_mask(&mut self, mask: &mut TokenSet) {
        mask.clear();
        if self.finished {
            return;
        }
        if self.can_open() {
            for k in 0..self.spec.kinds {
                mask.insert(self.spec.open(k));
            }
        }
        match self.stack.last() {
            Some(&k) => mask.insert(self.spec.close(k as usize)),
            None => mask.insert(self.spec.eos()),
        }
    }
    fn allowed_sparse(&mut self, out: &mut Vec<TokenId>) -> bool {
        out.clear();
        if self.finished {
            return true;
        }
        if self.can_open() {
            out.extend((0..self.spec.kinds).map(|k| self.spec.open(k)));
        }
        out.push(match self.stack.last() {
            Some(&k) => self.spec.close(k as usize),
            None => self.spec.eos(),
        });
        true
    }
    fn mask_key(&self) -> Option<u64> {
        // the mask depends only on: finished, whether an opening fits, the stack top
        if self.finished {
            return Some(u64::MAX);
        }
        let top = self.stack.last().map_or(0, |&k| k as u64 + 1);
        Some((top << 1) | u64::from(self.can_open()))
    }
    fn advance(&mut self, t: TokenId) -> Result<(), Rejected> {
        let position = self.num_tokens();
        let reject = |reason: &str| Rejected {
            token: t,
            position,
            reason: reason.into(),
        };
        let k = self.spec.kinds;
        let ti = t as usize;
        if self.finished {
            return Err(reject("already finished"));
        }
        if ti < k {
            if !self.can_open() {
                return Err(reject("opening would exceed the depth or length bound"));
            }
            self.stack.push(ti as u16);
        } else if ti < 2 * k {
            if self.stack.last() != Some(&((ti - k) as u16)) {
                return Err(reject("closing bracket does not match the open one"));
            }
            self.stack.pop();
        } else if t == self.spec.eos() {
            if !self.stack.is_empty() {
                return Err(reject("EOS with unclosed brackets"));
            }
            self.finished = true;
        } else {
            return Err(reject("not a Dyck token"));
        }
        self.history.push(t);
        Ok(())
    }
    fn rollback(&mut self, n: usize) -> Result<(), RollbackError> {
        let available = self.history.len();
        if n > available {
            return Err(RollbackError {
                requested: n,
                available,
            });
        }
        let k = self.spec.kinds;
        for _ in 0..n {
            // Non-empty: n <= history.len().
            let t = self.history.pop().unwrap_or(0) as usize;
            if t < k {
                self.stack.pop();
            } else if t < 2 * k {
                self.stack.push((t - k) as u16);
            } else {
                self.finished = false;
            }
        }
        Ok(())
    }
    fn is_accepting(&self) -> bool {
        !self.finished && self.stack.is_empty()
    }
    fn is_finished(&self) -> bool {
        self.finished
    }
    fn num_tokens(&self) -> usize {
        self.history.len()
    }
}
