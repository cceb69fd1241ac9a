//! The bounded Dyck language `D_{d,L}` ([`DyckSpec`]) and its matcher
//! [`DyckConstraint`] — the languages of the future-validity paper's
//! experiments (App. G).

use zapspec_core::{LookAhead, RejectReason, TokenId, TokenSet};

/// The bounded Dyck language D: balanced strings over `kinds` bracket types
/// with nesting depth at most `max_depth` and length at most `max_len` (the
/// empty string included). With one kind, `D_{3,16}` (`max_depth` 3,
/// `max_len` 16) has 988 members and `D_{3,12}` has 145 — the languages of
/// the future-validity paper's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DyckSpec {
    /// Number of bracket types.
    pub kinds: usize,
    /// Most brackets open at once.
    pub max_depth: usize,
    /// Most brackets in a member (EOS excluded).
    pub max_len: usize,
}

impl DyckSpec {
    /// Token `i < kinds` opens bracket kind `i`, token `kinds + i` closes it,
    /// token `2·kinds` is EOS.
    pub fn open(&self, kind: usize) -> TokenId {
        kind as TokenId
    }
    /// The token closing bracket kind `kind`.
    pub fn close(&self, kind: usize) -> TokenId {
        (self.kinds + kind) as TokenId
    }
    /// The EOS token, `2·kinds`.
    pub fn eos(&self) -> TokenId {
        (2 * self.kinds) as TokenId
    }
    /// The vocabulary size, `2·kinds + 1` (EOS included).
    pub fn vocab_size(&self) -> usize {
        2 * self.kinds + 1
    }
}

/// A [`Constraint`](zapspec_core::Constraint) for a [`DyckSpec`] language
/// (a [`Matcher`](zapspec_core::Matcher), with the [`LookAhead`] hooks: a
/// sparse list of at most `kinds + 1` tokens, and a mask key from the stack
/// top). It allows an opening bracket only when the string can still be
/// closed within `max_len`, so every prefix it allows extends to a member
/// (no dead ends). Every operation is `O(1)` (`O(kinds)` for a mask).
#[derive(Debug, Clone)]
pub struct DyckConstraint {
    spec: DyckSpec,
    stack: Vec<u16>,
    /// Brackets consumed (EOS is the finished flag, not a history entry).
    history: Vec<TokenId>,
    finished: bool,
}

impl DyckConstraint {
    /// The matcher at the empty string.
    pub fn new(spec: DyckSpec) -> Self {
        DyckConstraint {
            spec,
            stack: Vec::new(),
            history: Vec::new(),
            finished: false,
        }
    }
    /// The language.
    pub fn spec(&self) -> DyckSpec {
        self.spec
    }
    /// Current nesting depth.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }
    /// Brackets consumed (EOS excluded).
    pub fn len(&self) -> usize {
        self.history.len()
    }
    /// True before the first bracket.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn can_open(&self) -> bool {
        let d = self.stack.len();
        d < self.spec.max_depth && self.len() + d + 2 <= self.spec.max_len
    }
    /// Why the bracket `t` would be refused here, in this language's terms
    /// (`None`: it is allowed, or it is EOS, whose refusals are core's
    /// [`RejectReason`]s). [`Constraint::advance`](zapspec_core::Constraint::advance)
    /// reports every such refusal as [`RejectReason::NotAllowed`] (or
    /// [`RejectReason::OutOfVocabulary`]).
    pub fn refusal(&self, t: TokenId) -> Option<DyckRefusal> {
        let k = self.spec.kinds;
        let ti = t as usize;
        if self.finished || ti == 2 * k {
            None
        } else if ti < k {
            (!self.can_open()).then_some(DyckRefusal::DepthOrLength)
        } else if ti < 2 * k {
            (self.stack.last() != Some(&((ti - k) as u16))).then_some(DyckRefusal::Mismatch)
        } else {
            Some(DyckRefusal::OutOfVocabulary)
        }
    }
}

/// Why a [`DyckConstraint`] refuses a bracket ([`DyckConstraint::refusal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DyckRefusal {
    /// An opening bracket that would exceed the depth or length bound (the
    /// string could no longer be closed within the bounds).
    DepthOrLength,
    /// A closing bracket that does not match the innermost open one (or
    /// closes nothing).
    Mismatch,
    /// A token id past the language's vocabulary.
    OutOfVocabulary,
}

impl zapspec_core::Matcher for DyckConstraint {
    fn vocab_size(&self) -> usize {
        self.spec.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.spec.eos()
    }
    fn fill_next(&mut self, mask: &mut TokenSet) {
        mask.clear();
        if self.can_open() {
            for k in 0..self.spec.kinds {
                mask.insert(self.spec.open(k));
            }
        }
        if let Some(&k) = self.stack.last() {
            mask.insert(self.spec.close(k as usize));
        }
    }
    fn step(&mut self, t: TokenId) -> Result<(), RejectReason> {
        match self.refusal(t) {
            Some(DyckRefusal::OutOfVocabulary) => return Err(RejectReason::OutOfVocabulary),
            Some(_) => return Err(RejectReason::NotAllowed),
            None => {}
        }
        let k = self.spec.kinds;
        let ti = t as usize;
        if ti < k {
            self.stack.push(ti as u16);
        } else {
            self.stack.pop();
        }
        self.history.push(t);
        Ok(())
    }
    fn unstep(&mut self, n: usize) {
        let k = self.spec.kinds;
        for _ in 0..n {
            // Non-empty: n <= history.len().
            let t = self.history.pop().unwrap_or(0) as usize;
            if t < k {
                self.stack.pop();
            } else {
                self.stack.push((t - k) as u16);
            }
        }
    }
    fn num_steps(&self) -> usize {
        self.history.len()
    }
    fn is_complete(&self) -> bool {
        self.stack.is_empty()
    }
    fn finished(&self) -> bool {
        self.finished
    }
    fn set_finished(&mut self, finished: bool) {
        self.finished = finished;
    }
}

impl LookAhead for DyckConstraint {
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
}
