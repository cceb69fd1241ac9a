//! `GrammarMatcher`: the parser state of one sequence (XGrammar's
//! semantics), and the batch bitmask fill.
//!
//! Stop tokens: the engine knows one end-of-sequence token (its
//! vocabulary's EOS) and sets its bit when the grammar accepts. Here that
//! bit becomes the bits of every stop token of the matcher, and accepting
//! any stop token while the grammar accepts ends the sequence (the engine
//! consumes its EOS; `rollback(1)` undoes it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use rayon::prelude::*;

use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_earley::{EarleyError, EarleyMatcher};

use crate::bitmask::{as_int32_array, check_cols, rows_cols, rows_mut, write_row};
use crate::compiler::{CompiledGrammar, CompiledInner};
use crate::errors::{earley_error, guard, kind, raise};

/// Most bytes `find_jump_forward_string` looks ahead.
const MAX_JUMP_FORWARD: usize = 4096;

/// The mutable part of a matcher.
pub(crate) struct State {
    m: EarleyMatcher,
    scratch: TokenSet,
    /// `apply_phi_bias_inplace`'s estimator and buffers, kept from one
    /// call to the next (built on first use).
    phi: Option<Box<crate::phi::Scratch>>,
}

impl State {
    fn new(m: EarleyMatcher, scratch: TokenSet) -> Self {
        State {
            m,
            scratch,
            phi: None,
        }
    }
}

/// Matches one sequence against a compiled grammar: fills the next
/// token's bitmask, accepts tokens, rolls back, forks. Thread-safe: its
/// state is behind a lock, and filling a bitmask releases the GIL.
#[pyclass(frozen, module = "zapspec")]
pub struct GrammarMatcher {
    c: Arc<CompiledInner>,
    stop: Arc<[TokenId]>,
    /// XGrammar's `terminate_without_stop_token`: the sequence ends when
    /// the grammar completes; stop tokens are never accepted.
    no_stop: bool,
    /// `default_temperature` as given (zapspec's grammars carry no
    /// per-rule temperature, so it is the temperature everywhere).
    temperature: Option<f64>,
    st: Mutex<State>,
}

impl GrammarMatcher {
    /// The state, locked. Never blocks while holding the GIL: a thread
    /// that holds the lock may be waiting for the GIL (a fill releases it
    /// while it computes), so a contended lock is awaited detached.
    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, State> {
        loop {
            match self.st.try_lock() {
                Ok(g) => return g,
                Err(std::sync::TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => py.detach(|| {
                    drop(self.st.lock().unwrap_or_else(|e| e.into_inner()));
                }),
            }
        }
    }

    fn vs(&self) -> usize {
        self.c.tok.vocab_size
    }

    fn eos(&self) -> TokenId {
        self.c.tok.vocab.eos()
    }

    fn fresh(&self, m: EarleyMatcher) -> Self {
        let n = self.c.tok.vocab.len();
        GrammarMatcher {
            c: self.c.clone(),
            stop: self.stop.clone(),
            no_stop: self.no_stop,
            temperature: self.temperature,
            st: Mutex::new(State::new(m, TokenSet::new(n))),
        }
    }

    /// A token id as the vocabulary's, or `InvalidTokenError`.
    fn token(&self, py: Python<'_>, id: i64) -> PyResult<TokenId> {
        if id < 0 || id as u64 >= self.vs() as u64 {
            return Err(raise(
                py,
                "InvalidTokenError",
                format!("token id {id} is outside the vocabulary (0..{})", self.vs()),
                kind("token id"),
            ));
        }
        Ok(id as TokenId)
    }

    /// [`Self::accept_token`] on a locked state; `Err` only for a limit.
    fn accept(&self, st: &mut State, t: TokenId) -> Result<bool, EarleyError> {
        let m = &mut st.m;
        if m.is_finished() {
            return Ok(false);
        }
        if self.stop.contains(&t) {
            if self.no_stop || !m.is_accepting() {
                return Ok(false);
            }
            let eos = self.eos();
            return Ok(m.advance(eos).is_ok());
        }
        let v = &self.c.tok.vocab;
        if t as usize >= v.len() || v.is_special(t) {
            return Ok(false);
        }
        match m.try_advance(t) {
            Ok(()) => Ok(true),
            Err(EarleyError::Rejected(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether the sequence is over: a stop token was accepted, or, under
    /// `terminate_without_stop_token`, the grammar is complete.
    fn ended(&self, m: &EarleyMatcher) -> bool {
        m.is_finished() || (self.no_stop && m.is_accepting())
    }

    /// Fills `row` for the locked state (GIL released by the caller).
    fn fill(&self, st: &mut State, row: &mut [i32]) -> bool {
        let (vs, eos) = (self.vs(), self.eos());
        let State { m, scratch, .. } = st;
        m.with_mask(scratch, |set| write_row(set, row, vs, eos, &self.stop))
    }
}

/// A draft tree as `traverse_draft_tree` takes it.
struct Tree<'a> {
    next: &'a [i64],
    sib: &'a [i64],
    toks: &'a [i64],
    cols: usize,
    deadline: Option<std::time::Duration>,
    start: std::time::Instant,
}

impl GrammarMatcher {
    /// Visits the tree from node 0 (the root, at `st`'s state) depth
    /// first with an explicit stack (a chain of any depth takes no call
    /// stack), filling each visited node's row; `false` when the time ran
    /// out, with `st` back at the root's state either way.
    fn traverse(&self, t: &Tree<'_>, st: &mut State, data: &mut [i32]) -> bool {
        enum Step {
            /// Visit `pos`, a child of `parent` (`None`: the root).
            Enter(usize, Option<usize>),
            /// `pos`'s subtree is done: undo its token (`advanced`), then
            /// visit its next sibling.
            Exit(usize, Option<usize>, bool),
        }
        let mut stack = vec![Step::Enter(0, None)];
        while let Some(step) = stack.pop() {
            match step {
                Step::Enter(pos, parent) => {
                    let row = pos * t.cols..(pos + 1) * t.cols;
                    let allowed = match parent {
                        None => true,
                        Some(p) => {
                            let tok = t.toks[pos];
                            tok >= 0
                                && (tok as usize) < t.cols * 32
                                && (data[p * t.cols + tok as usize / 32] as u32 >> (tok % 32)) & 1
                                    == 1
                        }
                    };
                    if allowed && parent.is_some() {
                        if let Some(d) = t.deadline {
                            if t.start.elapsed() > d {
                                // unwind: undo every token on the path
                                for s in stack.iter().rev() {
                                    if let Step::Exit(_, Some(_), true) = s {
                                        let _ = st.m.rollback(1);
                                    }
                                }
                                return false;
                            }
                        }
                    }
                    let advanced = allowed
                        && (parent.is_none()
                            || matches!(self.accept(st, t.toks[pos] as TokenId), Ok(true)));
                    stack.push(Step::Exit(pos, parent, advanced));
                    if advanced && !self.ended(&st.m) {
                        self.fill(st, &mut data[row]);
                        if t.next[pos] >= 0 {
                            stack.push(Step::Enter(t.next[pos] as usize, Some(pos)));
                        }
                    } else {
                        data[row].fill(0);
                    }
                }
                Step::Exit(pos, parent, advanced) => {
                    if advanced && parent.is_some() {
                        let _ = st.m.rollback(1);
                    }
                    if t.sib[pos] >= 0 {
                        stack.push(Step::Enter(t.sib[pos] as usize, parent));
                    }
                }
            }
        }
        true
    }
}

fn terminated(py: Python<'_>) -> PyErr {
    raise(
        py,
        "MatcherTerminatedError",
        "the matcher has accepted a stop token: no next token to mask (rollback or reset it)",
        kind("terminated"),
    )
}

#[pymethods]
impl GrammarMatcher {
    /// A matcher at the start of `compiled_grammar`'s language
    /// (XGrammar's signature and defaults). `override_stop_tokens`: the
    /// tokens that end the sequence (an id or a list; default: the
    /// tokenizer's); `terminate_without_stop_token`: the sequence ends
    /// when the grammar completes and stop tokens are never accepted
    /// (`is_terminated()` is then `is_completed()`);
    /// `max_rollback_tokens`: accepted and ignored, as in XGrammar —
    /// rollback is unbounded (the property reads -1); vLLM passes its
    /// number of speculative tokens there. `default_temperature`: what
    /// the `temperature` property reports (zapspec's grammars set no
    /// per-rule temperature).
    #[new]
    #[pyo3(signature = (compiled_grammar, *, override_stop_tokens = None, terminate_without_stop_token = false, max_rollback_tokens = -1, default_temperature = None))]
    fn new(
        py: Python<'_>,
        compiled_grammar: &Bound<'_, PyAny>,
        override_stop_tokens: Option<&Bound<'_, PyAny>>,
        terminate_without_stop_token: bool,
        max_rollback_tokens: i64,
        default_temperature: Option<f64>,
    ) -> PyResult<Self> {
        let _ = max_rollback_tokens;
        let Ok(compiled_grammar) = compiled_grammar.cast::<CompiledGrammar>() else {
            return Err(raise(
                py,
                "GrammarError",
                "The grammar should be compiled before passing it to GrammarMatcher (GrammarCompiler.compile_*)",
                kind("not compiled"),
            ));
        };
        let compiled_grammar = compiled_grammar.get();
        guard(|| {
            let c = compiled_grammar.inner.clone();
            let stop: Vec<TokenId> = match override_stop_tokens.filter(|o| !o.is_none()) {
                None => c.tok.stop.clone(),
                Some(o) => {
                    let ids: Vec<i64> = match o.extract::<i64>() {
                        Ok(i) => vec![i],
                        Err(_) => o.extract()?,
                    };
                    let mut out = Vec::new();
                    for id in ids {
                        if id < 0 || id as u64 >= c.tok.vocab_size as u64 {
                            return Err(raise(
                                py,
                                "InvalidTokenError",
                                format!(
                                    "stop token {id} is outside the vocabulary (0..{})",
                                    c.tok.vocab_size
                                ),
                                kind("token id"),
                            ));
                        }
                        out.push(id as TokenId);
                    }
                    out
                }
            };
            let n = c.tok.vocab.len();
            let m = c.g.matcher();
            Ok(GrammarMatcher {
                c,
                stop: stop.into(),
                no_stop: terminate_without_stop_token,
                temperature: default_temperature,
                st: Mutex::new(State::new(m, TokenSet::new(n))),
            })
        })
    }

    /// Writes the next token's mask into row `index` of `bitmask` (an
    /// int32 numpy array or CPU torch tensor of `ceil(vocab_size / 32)`
    /// words per row; 1-D means one row). Returns whether the mask bans
    /// some token (XGrammar's `need_apply`). Does not change the state;
    /// releases the GIL. On a terminated matcher:
    /// `zapspec.MatcherTerminatedError`.
    #[pyo3(signature = (bitmask, index = 0, *, debug_print = false))]
    fn fill_next_token_bitmask(
        &self,
        py: Python<'_>,
        bitmask: &Bound<'_, PyAny>,
        index: i64,
        debug_print: bool,
    ) -> PyResult<bool> {
        let _ = debug_print;
        guard(|| {
            let arr = as_int32_array(py, bitmask)?;
            let (rows, cols) = rows_cols(&arr);
            check_cols(py, cols, self.vs())?;
            if index < 0 || index as usize >= rows {
                return Err(raise(
                    py,
                    "BitmaskError",
                    format!("index {index} is outside the bitmask's {rows} rows"),
                    kind("bitmask"),
                ));
            }
            // SAFETY: from `as_int32_array`; the only reference to the data
            let data = unsafe { rows_mut(&arr) };
            let row = &mut data[index as usize * cols..(index as usize + 1) * cols];
            let mut st = self.lock(py);
            if st.m.is_finished() {
                return Err(terminated(py));
            }
            let st = &mut *st;
            Ok(py.detach(|| self.fill(st, row)))
        })
    }

    /// Future-validity correction of one row of logits, in place: the
    /// mask of `fill_next_token_bitmask` applied (disallowed ids `-inf`)
    /// and each allowed id's logit raised by `log Φ̂(y)`, OneStep-Cheap's
    /// estimate of the probability that a valid text can still follow `y`
    /// (the future-validity paper's Def. 9 and Doob transform with
    /// h = Φ̂, up to one constant per row that the softmax cancels). Pass
    /// the model's raw row (float32, one entry per vocabulary id, already
    /// divided by the temperature when sampling at one): Φ̂ is read from
    /// it. Sampling from the result approximates the model conditioned on
    /// validity (μ*) where masking alone samples μ^proj; the quality of
    /// the approximation is the estimator's
    /// (`examples/results/fvo-race/` measures it). `epsilon` bounds the
    /// extra TV error of scoring candidates in decreasing mass and
    /// stopping early (`None`: every candidate class scored, the exact
    /// estimate). Returns that position's TV bound (0.0 when exact).
    #[pyo3(signature = (logits, *, epsilon = Some(1e-3)))]
    fn apply_phi_bias_inplace(
        &self,
        py: Python<'_>,
        mut logits: numpy::PyReadwriteArray1<'_, f32>,
        epsilon: Option<f64>,
    ) -> PyResult<f64> {
        guard(|| {
            let row = logits.as_slice_mut().map_err(|_| {
                raise(
                    py,
                    "BitmaskError",
                    "logits must be a contiguous float32 row",
                    kind("logits"),
                )
            })?;
            if row.len() != self.vs() {
                return Err(raise(
                    py,
                    "BitmaskError",
                    format!(
                        "logits have {} entries, the vocabulary {}",
                        row.len(),
                        self.vs()
                    ),
                    kind("logits"),
                ));
            }
            let mut st = self.lock(py);
            if st.m.is_finished() {
                return Err(terminated(py));
            }
            let State { m, scratch, phi } = &mut *st;
            let phi = phi.get_or_insert_with(Default::default);
            m.with_mask(scratch, |set| phi.mask.clone_from(set));
            let (stop, no_stop) = (&self.stop, self.no_stop);
            py.detach(|| crate::phi::apply(m, row, stop, no_stop, epsilon, phi))
                .map(|r| r.tv_bound)
                .map_err(|e| raise(py, "ZapspecError", e.to_string(), kind("phi")))
        })
    }

    /// Accepts one token: `True` and the state advanced, or `False` and
    /// the state unchanged (the token does not continue the grammar, is a
    /// special or padding id, is a stop token before the grammar accepts,
    /// or the matcher has terminated). A stop token while the grammar
    /// accepts terminates the matcher. An id outside the vocabulary is
    /// `zapspec.InvalidTokenError`; an engine limit `zapspec.LimitExceeded`.
    #[pyo3(signature = (token_id, *, debug_print = false))]
    fn accept_token(&self, py: Python<'_>, token_id: i64, debug_print: bool) -> PyResult<bool> {
        let _ = debug_print;
        guard(|| {
            let t = self.token(py, token_id)?;
            let mut st = self.lock(py);
            self.accept(&mut st, t).map_err(|e| earley_error(py, &e))
        })
    }

    /// Accepts a string (or bytes) as one step (one `rollback` undoes
    /// it), not necessarily token-aligned. `False` and the state
    /// unchanged when it does not continue the grammar.
    #[pyo3(signature = (input_str, *, debug_print = false))]
    fn accept_string(
        &self,
        py: Python<'_>,
        input_str: &Bound<'_, PyAny>,
        debug_print: bool,
    ) -> PyResult<bool> {
        let _ = debug_print;
        guard(|| {
            let bytes: Vec<u8> = if let Ok(s) = input_str.cast::<PyString>() {
                s.extract::<String>()?.into_bytes()
            } else if let Ok(b) = input_str.cast::<PyBytes>() {
                b.as_bytes().to_vec()
            } else {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "accept_string takes str or bytes",
                ));
            };
            let mut st = self.lock(py);
            if st.m.is_finished() {
                return Ok(false);
            }
            Ok(st.m.advance_bytes(&bytes))
        })
    }

    /// Undoes the last `num_tokens` accepted tokens (a stop token and an
    /// accepted string count as one each). More than were accepted is
    /// `zapspec.RollbackError`.
    #[pyo3(signature = (num_tokens = 1))]
    fn rollback(&self, py: Python<'_>, num_tokens: i64) -> PyResult<()> {
        guard(|| {
            let mut st = self.lock(py);
            let available = st.m.num_tokens();
            let n = usize::try_from(num_tokens).map_err(|_| {
                raise(
                    py,
                    "RollbackError",
                    format!("cannot roll back {num_tokens} tokens"),
                    kind("rollback"),
                )
            })?;
            st.m.rollback(n).map_err(|_| {
                raise(
                    py,
                    "RollbackError",
                    format!("cannot roll back {n} tokens: only {available} were accepted"),
                    kind("rollback"),
                )
            })
        })
    }

    /// The matcher's state as text, for debugging (XGrammar's
    /// `_debug_print_internal_state`): whether it terminated, the tokens
    /// it can still roll back, and its Earley chart, one line per set
    /// (`position: [(dotted rule position, state, origin), …]`).
    fn _debug_print_internal_state(&self, py: Python<'_>) -> String {
        let st = self.lock(py);
        let (sets, items) = st.m.chart_size();
        format!(
            "terminated: {}, steps that can be rolled back: {}, chart: {sets} sets, {items} items\n{}",
            self.ended(&st.m),
            st.m.num_tokens(),
            st.m.dump_chart()
        )
    }

    /// Whether the sequence is over: a stop token was accepted (or, under
    /// `terminate_without_stop_token`, the grammar is complete).
    fn is_terminated(&self, py: Python<'_>) -> bool {
        let st = self.lock(py);
        self.ended(&st.m)
    }

    /// Whether the text so far is a complete member of the language
    /// (XGrammar's `is_completed`; true after termination too).
    fn is_completed(&self, py: Python<'_>) -> bool {
        let st = self.lock(py);
        st.m.is_finished() || st.m.is_accepting()
    }

    /// Whether a stop token would be accepted now (complete, not
    /// terminated).
    fn is_accepting(&self, py: Python<'_>) -> bool {
        self.lock(py).m.is_accepting()
    }

    /// Back to the start of the language (the compiled grammar's caches
    /// are kept).
    fn reset(&self, py: Python<'_>) {
        let m = self.c.g.matcher();
        self.lock(py).m = m;
    }

    /// An independent copy of this matcher (same grammar, copied state).
    fn fork(&self, py: Python<'_>) -> Self {
        let m = self.lock(py).m.clone();
        self.fresh(m)
    }

    /// The longest string every continuation starts with (bytes the
    /// grammar forces one by one), as text: jump-forward decoding can
    /// append it without sampling. Cut before an incomplete UTF-8
    /// character. Does not change the state.
    fn find_jump_forward_string(&self, py: Python<'_>) -> String {
        let b = self.lock(py).m.forced_bytes(MAX_JUMP_FORWARD);
        match std::str::from_utf8(&b) {
            Ok(s) => s.to_string(),
            Err(e) => String::from_utf8_lossy(&b[..e.valid_up_to()]).into_owned(),
        }
    }

    /// The forced continuation as tokens: the jump-forward string encoded
    /// by the tokenizer, minus its last token (which could merge with the
    /// text after it), kept as far as the grammar accepts the tokens.
    /// Appending them changes nothing the grammar allows; whether the
    /// model would have tokenized the text the same way is the caller's
    /// concern (the first token may merge with the text before it —
    /// llguidance's token-healing problem). Does not change the state.
    fn compute_forced_tokens(&self, py: Python<'_>) -> PyResult<Vec<TokenId>> {
        guard(|| {
            let text = self.find_jump_forward_string(py);
            if text.is_empty() {
                return Ok(Vec::new());
            }
            let mut ids = self
                .c
                .tok
                .vocab
                .encode(&text)
                .map_err(|e| crate::errors::vocab_error(py, &e))?;
            ids.pop();
            let mut fork = self.lock(py).m.clone();
            let mut out = Vec::new();
            for t in ids {
                if fork.advance(t).is_err() {
                    break;
                }
                out.push(t);
            }
            Ok(out)
        })
    }

    /// How many of `token_ids` (a draft), from the start, the grammar
    /// accepts in turn: what a speculative decoder may keep. Stop tokens
    /// count as `accept_token` treats them. Does not change the state.
    fn validate_tokens(&self, py: Python<'_>, token_ids: Vec<i64>) -> PyResult<usize> {
        guard(|| {
            let ids = token_ids
                .iter()
                .map(|&i| self.token(py, i))
                .collect::<PyResult<Vec<_>>>()?;
            let mut st = State::new(self.lock(py).m.clone(), TokenSet::new(0));
            let n = py.detach(|| {
                let mut n = 0;
                for &t in &ids {
                    if !matches!(self.accept(&mut st, t), Ok(true)) {
                        break;
                    }
                    n += 1;
                }
                n
            });
            Ok(n)
        })
    }

    /// Tokens accepted so far (a stop token counts).
    #[getter]
    fn num_tokens(&self, py: Python<'_>) -> usize {
        self.lock(py).m.num_tokens()
    }

    /// The tokens that end the sequence.
    #[getter]
    fn stop_token_ids(&self) -> Vec<TokenId> {
        self.stop.to_vec()
    }

    /// -1: rollback is unbounded (XGrammar's value; the constructor's
    /// argument is ignored).
    #[getter]
    fn max_rollback_tokens(&self) -> i64 {
        -1
    }

    /// The sampling temperature for the next token: `default_temperature`.
    #[getter]
    fn temperature(&self) -> Option<f64> {
        self.temperature
    }

    /// Fills the bitmask row of every node of a draft token tree that the
    /// grammar reaches (XGrammar's `traverse_draft_tree`, as SGLang's
    /// EAGLE path calls it). Node 0 is the token the target model just
    /// produced (already accepted); `retrieve_next_token[i]` is node
    /// `i`'s first child, `retrieve_next_sibling[i]` its next sibling
    /// (-1: none), `draft_tokens[i]` its token. A node whose token its
    /// parent's mask bans, that the grammar refuses, or after which the
    /// sequence has ended gets an all-zero row. `time_threshold` > 0:
    /// stop after that many seconds and return `False` (the rows not
    /// reached are unchanged). `temperatures` (float32, one per node):
    /// -1 for every node (no per-rule temperature; `default_temperature`
    /// where one was given). The matcher's state is unchanged.
    #[pyo3(signature = (retrieve_next_token, retrieve_next_sibling, draft_tokens, token_bitmask, time_threshold = -1.0, temperatures = None))]
    #[allow(clippy::too_many_arguments)] // XGrammar's signature
    fn traverse_draft_tree(
        &self,
        py: Python<'_>,
        retrieve_next_token: &Bound<'_, PyAny>,
        retrieve_next_sibling: &Bound<'_, PyAny>,
        draft_tokens: &Bound<'_, PyAny>,
        token_bitmask: &Bound<'_, PyAny>,
        time_threshold: f64,
        temperatures: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        guard(|| {
            let err = |m: String| raise(py, "BitmaskError", m, kind("draft tree"));
            // int64 arrays (torch or numpy) or lists of ints, as XGrammar
            let ids = |a: &Bound<'_, PyAny>| -> PyResult<Vec<i64>> {
                if a.hasattr("dtype")? {
                    let dt = a.getattr("dtype")?.str()?.to_string();
                    if dt != "torch.int64" && dt != "int64" {
                        return Err(err(format!(
                            "the draft tree's arrays must be int64, not {dt}"
                        )));
                    }
                }
                if a.hasattr("tolist")? {
                    a.call_method0("tolist")?.extract()
                } else {
                    a.extract()
                }
            };
            let (next, sib, toks) = (
                ids(retrieve_next_token)?,
                ids(retrieve_next_sibling)?,
                ids(draft_tokens)?,
            );
            let n = toks.len();
            if next.len() != n || sib.len() != n {
                return Err(err(format!(
                    "the draft tree's arrays differ in length ({}, {}, {})",
                    next.len(),
                    sib.len(),
                    n
                )));
            }
            if let Some(&bad) = next.iter().chain(&sib).find(|&&x| x < -1 || x >= n as i64) {
                return Err(err(format!(
                    "node index {bad} is outside the tree of {n} nodes"
                )));
            }
            if sib.first().is_some_and(|&s| s != -1) {
                return Err(err("the root of a draft tree has no sibling".into()));
            }
            // every node reached once (no cycle, no second parent); any
            // depth (the walk keeps its own stack)
            let mut seen = vec![false; n];
            let mut stack: Vec<usize> = if n > 0 { vec![0] } else { vec![] };
            while let Some(i) = stack.pop() {
                if std::mem::replace(&mut seen[i], true) {
                    return Err(err(format!(
                        "draft tree node {i} is reached twice (a cycle, or two parents)"
                    )));
                }
                if next[i] >= 0 {
                    stack.push(next[i] as usize);
                }
                if sib[i] >= 0 {
                    stack.push(sib[i] as usize);
                }
            }
            let arr = as_int32_array(py, token_bitmask)?;
            if numpy::PyUntypedArrayMethods::ndim(&arr) != 2 {
                return Err(err(
                    "the draft tree's bitmask must have 2 dimensions (a row per node)".into(),
                ));
            }
            let (rows, cols) = rows_cols(&arr);
            check_cols(py, cols, self.vs())?;
            if rows < n {
                return Err(err(format!("the bitmask has {rows} rows for {n} nodes")));
            }
            if let Some(t) = temperatures.filter(|t| !t.is_none()) {
                t.call_method1("fill_", (self.temperature.unwrap_or(-1.0),))
                    .or_else(|_| t.call_method1("fill", (self.temperature.unwrap_or(-1.0),)))?;
            }
            if n == 0 {
                return Ok(true);
            }
            let m = self.lock(py).m.clone();
            // SAFETY: from `as_int32_array`; the only reference to the data
            let data = unsafe { rows_mut(&arr) };
            let mut st = State::new(m, TokenSet::new(self.c.tok.vocab.len()));
            let start = std::time::Instant::now();
            let tree = Tree {
                next: &next,
                sib: &sib,
                toks: &toks,
                cols,
                deadline: (time_threshold > 0.0)
                    .then(|| std::time::Duration::from_secs_f64(time_threshold)),
                start,
            };
            Ok(py.detach(|| self.traverse(&tree, &mut st, data)))
        })
    }

    /// The model's vocabulary size (bitmask columns: its `ceil(/32)`).
    #[getter]
    fn vocab_size(&self) -> usize {
        self.c.tok.vocab_size
    }

    /// For tests: the engine's own mask (`Constraint::fill_mask`, 64-bit
    /// words over the tokenizer's ids, EOS bit = accepts), bypassing the
    /// bitmask conversion.
    fn _engine_mask_words(&self, py: Python<'_>) -> Vec<u64> {
        let mut st = self.lock(py);
        let n = self.c.tok.vocab.len();
        let mut set = TokenSet::new(n);
        st.m.fill_mask(&mut set);
        set.words().to_vec()
    }

    /// For benchmarks: `repeats` timings (ns, measured in Rust) at the
    /// current state of (a) the engine's own `Constraint::fill_mask` into
    /// a `TokenSet` — the call a Rust user makes — and (b) this package's
    /// fill of a bitmask row (the lent mask converted into the row),
    /// without Python in either.
    fn _time_fills(&self, py: Python<'_>, repeats: usize) -> (Vec<u64>, Vec<u64>) {
        let mut st = self.lock(py);
        let n = self.c.tok.vocab.len();
        let mut set = TokenSet::new(n);
        let mut row = vec![0i32; crate::bitmask::words_per_row(self.vs())];
        let mut engine = Vec::with_capacity(repeats);
        let mut package = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let t = std::time::Instant::now();
            st.m.fill_mask(&mut set);
            engine.push(t.elapsed().as_nanos() as u64);
            let t = std::time::Instant::now();
            self.fill(&mut st, &mut row);
            package.push(t.elapsed().as_nanos() as u64);
        }
        (engine, package)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let st = self.lock(py);
        format!(
            "GrammarMatcher(num_tokens={}, accepting={}, terminated={})",
            st.m.num_tokens(),
            st.m.is_accepting(),
            st.m.is_finished()
        )
    }
}

/// How long `batch_fill_next_token_bitmask` fills rows on the calling
/// thread before it hands the rest to its pool (when no `max_threads` is
/// given): 64 cached rows of a 200k vocabulary take about 75 µs, one cold
/// mask about a millisecond.
const HANDOFF: std::time::Duration = std::time::Duration::from_micros(100);

/// The machine's cores, asked once (`available_parallelism` reads the
/// cgroup files on Linux: tens of microseconds a call).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Rayon pools by thread count, built once each.
fn pool(threads: usize) -> PyResult<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(p) = pools.get(&threads) {
        return Ok(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("zapspec-mask-{i}"))
            .build()
            .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?,
    );
    pools.insert(threads, p.clone());
    Ok(p)
}

/// Fills row `indices[i]` (default `i`) of `bitmask` with the next-token
/// mask of `matchers[i]`, in parallel on up to `max_threads` threads
/// (default: the machine's cores) with the GIL released. Equal to a loop
/// of `fill_next_token_bitmask`. Without `max_threads`, rows are filled
/// on the calling thread for the first 100 µs and the rest in parallel
/// (cached masks are cheaper to fill than to hand over). Rows must be
/// distinct; a terminated
/// matcher is `zapspec.MatcherTerminatedError` (no row is written then).
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices = None, max_threads = None))]
pub(crate) fn batch_fill_next_token_bitmask(
    py: Python<'_>,
    matchers: Vec<Bound<'_, GrammarMatcher>>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<i64>>,
    max_threads: Option<usize>,
) -> PyResult<Vec<bool>> {
    guard(|| {
        let arr = as_int32_array(py, bitmask)?;
        let (rows, cols) = rows_cols(&arr);
        let err = |m: String| raise(py, "BitmaskError", m, kind("bitmask"));
        let idx: Vec<usize> = match indices {
            None => (0..matchers.len()).collect(),
            Some(v) => {
                if v.len() != matchers.len() {
                    return Err(err(format!(
                        "{} indices for {} matchers",
                        v.len(),
                        matchers.len()
                    )));
                }
                v.iter()
                    .map(|&i| {
                        usize::try_from(i).map_err(|_| err(format!("row index {i} is negative")))
                    })
                    .collect::<PyResult<_>>()?
            }
        };
        let mut seen = vec![false; rows];
        for &i in &idx {
            if i >= rows {
                return Err(err(format!(
                    "row index {i} is outside the bitmask's {rows} rows"
                )));
            }
            if std::mem::replace(&mut seen[i], true) {
                return Err(err(format!("row index {i} appears twice")));
            }
        }
        let ms: Vec<&GrammarMatcher> = matchers.iter().map(|m| m.get()).collect();
        let mut ptrs: Vec<*const GrammarMatcher> = ms.iter().map(|&m| m as *const _).collect();
        ptrs.sort_unstable();
        if ptrs.windows(2).any(|w| w[0] == w[1]) {
            return Err(err("a matcher appears twice in the batch".into()));
        }
        for m in &ms {
            check_cols(py, cols, m.vs())?;
        }
        // SAFETY: from `as_int32_array`; split into distinct rows below,
        // the only references to the data
        let data = unsafe { rows_mut(&arr) };
        let mut slots: Vec<Option<&mut [i32]>> = data.chunks_mut(cols.max(1)).map(Some).collect();
        let mut jobs: Vec<(&GrammarMatcher, &mut [i32], bool)> = Vec::with_capacity(ms.len());
        for (m, &i) in ms.iter().zip(&idx) {
            let row = slots[i]
                .take()
                .ok_or_else(|| err(format!("row index {i} appears twice")))?;
            jobs.push((m, row, false));
        }
        let threads = max_threads
            .unwrap_or_else(cores)
            .clamp(1, jobs.len().max(1));
        // all locks first (in address order, so that two batches sharing
        // matchers cannot wait on each other): a terminated matcher writes
        // no row
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_unstable_by_key(|&i| jobs[i].0 as *const GrammarMatcher);
        let mut locked: Vec<Option<MutexGuard<'_, State>>> =
            (0..jobs.len()).map(|_| None).collect();
        for i in order {
            let g = jobs[i].0.lock(py);
            if g.m.is_finished() {
                return Err(terminated(py));
            }
            locked[i] = Some(g);
        }
        let mut guards: Vec<MutexGuard<'_, State>> = locked.into_iter().flatten().collect();
        let mut work: Vec<(&GrammarMatcher, &mut [i32], &mut State, bool)> = jobs
            .into_iter()
            .zip(guards.iter_mut())
            .map(|((m, row, _), g)| (m, row, &mut **g, false))
            .collect();
        let pool = if threads > 1 {
            Some(pool(threads)?)
        } else {
            None
        };
        // `max_threads=None`: rows are filled on the calling thread while
        // they are cheap (state-cache hits: handing them to a pool costs
        // more than filling them), and the rest go to the pool once the
        // batch has taken `HANDOFF` (cold masks: trie walks of a
        // millisecond each). An explicit `max_threads` hands every row to
        // its pool.
        let handoff = if max_threads.is_none() {
            HANDOFF
        } else {
            std::time::Duration::ZERO
        };
        py.detach(|| {
            let start = std::time::Instant::now();
            let mut k = 0;
            if pool.is_none() || !handoff.is_zero() {
                while k < work.len() && (pool.is_none() || start.elapsed() < handoff) {
                    let (m, row, st, need) = &mut work[k];
                    *need = m.fill(st, row);
                    k += 1;
                }
            }
            if let (Some(p), true) = (pool, k < work.len()) {
                p.install(|| {
                    work[k..]
                        .par_iter_mut()
                        .for_each(|(m, row, st, need)| *need = m.fill(st, row))
                });
            }
        });
        Ok(work.iter().map(|w| w.3).collect())
    })
}

/// `logits[r, j] = -inf` where bit `j` of bitmask row `r` is 0, for the
/// rows `indices` (default all), `j < min(logits columns, 32 · bitmask
/// columns)`: the float32 numpy path of `apply_token_bitmask_inplace`.
/// `logits` may be strided (llama-cpp-python hands its processors a view
/// into its candidate array with a 12-byte stride); a contiguous row is
/// masked word by word (contiguous or not), a whole banned word at once.
#[pyfunction]
#[pyo3(signature = (logits, bitmask, indices = None))]
pub(crate) fn _apply_token_bitmask_f32(
    py: Python<'_>,
    logits: &Bound<'_, numpy::PyArrayDyn<f32>>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<i64>>,
) -> PyResult<()> {
    guard(|| {
        use numpy::ndarray::{Axis, Ix2};
        use numpy::PyArrayMethods;
        let err = |m: String| raise(py, "BitmaskError", m, kind("bitmask"));
        let arr = as_int32_array(py, bitmask)?;
        let (brows, bcols) = rows_cols(&arr);
        let nd = logits.ndim();
        if nd != 1 && nd != 2 {
            return Err(err(format!("logits must have 1 or 2 dimensions, not {nd}")));
        }
        let b = arr.try_readonly().map_err(|e| err(e.to_string()))?;
        let bits = b.as_slice().map_err(|e| err(e.to_string()))?;
        let mut l = logits.try_readwrite().map_err(|e| err(e.to_string()))?;
        let view = l.as_array_mut();
        let mut view = if nd == 1 {
            view.insert_axis(Axis(0)).into_dimensionality::<Ix2>()
        } else {
            view.into_dimensionality::<Ix2>()
        }
        .map_err(|e| err(e.to_string()))?;
        let (lrows, lcols) = view.dim();
        let rows: Vec<usize> = match indices {
            None => {
                if lrows != brows {
                    return Err(err(format!("{lrows} logit rows but {brows} bitmask rows")));
                }
                (0..lrows).collect()
            }
            Some(v) => v
                .iter()
                .map(|&i| {
                    usize::try_from(i)
                        .ok()
                        .filter(|&i| i < lrows && i < brows)
                        .ok_or_else(|| {
                            err(format!(
                                "row index {i} is outside the logits or the bitmask"
                            ))
                        })
                })
                .collect::<PyResult<_>>()?,
        };
        let n = lcols.min(32 * bcols);
        py.detach(|| {
            for r in rows {
                let brow = &bits[r * bcols..(r + 1) * bcols];
                mask_row(view.row_mut(r).slice_mut(numpy::ndarray::s![..n]), brow);
            }
        });
        Ok(())
    })
}

/// `-inf` into the logits of a row (contiguous or strided) whose bits
/// are 0.
fn mask_row(mut vals: numpy::ndarray::ArrayViewMut1<'_, f32>, brow: &[i32]) {
    use numpy::ndarray::Axis;
    for (mut chunk, &w) in vals.axis_chunks_iter_mut(Axis(0), 32).zip(brow) {
        match w as u32 {
            u32::MAX => {}
            // most words of a constrained mask ban all 32
            0 => chunk.fill(f32::NEG_INFINITY),
            w => {
                for (k, x) in chunk.iter_mut().enumerate() {
                    if (w >> k) & 1 == 0 {
                        *x = f32::NEG_INFINITY;
                    }
                }
            }
        }
    }
}
