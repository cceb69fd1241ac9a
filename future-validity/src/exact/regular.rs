//! Exact Φ for regular languages under finite-state language models
//! (paper §5.5 "Regular languages: single automaton step per candidate").
//!
//! When the model's next-token law depends only on a finite state `s`
//! ([`FiniteStateLm`]: a bigram LM, an iid model, an n-gram), Φ depends
//! only on the pair `(q, s)` of DFA state and model state:
//!
//! ```text
//! Φ(q, s) = p(EOS | s)·1[q accepting] + Σ_{u ≠ EOS} p(u | s) · Φ(δ(q,u), s·u)
//! ```
//!
//! [`RegularDp::solve`] builds the reachable product graph and solves this
//! by one backward pass in reverse topological order when the graph is
//! acyclic (e.g. length-bounded languages such as the budget language
//! `L_{n,K}`, App. H.4), and by monotone value iteration from 0 (which
//! converges to the least fixed point, the probability of ending in `L`)
//! otherwise. Token-time queries are then table look-ups.

use std::collections::HashMap;
use std::hash::Hash;

use zapspec_core::{
    AllowedRef, Constraint, LanguageModel, LookAhead, RejectReason, TokenId, TokenSet,
};

use crate::error::PhiError;
use crate::estimator::{
    check_query, check_vocab, clamp_log, copy_on_mask, PhiCost, PhiEstimator, PhiQuery, PhiResult,
};

/// A language model whose next-token law is a function of a finite state.
pub trait FiniteStateLm {
    /// The model's state (e.g. the previous token of a bigram model).
    type State: Clone + Eq + Hash;
    /// The model state after `context` (prompt included).
    fn state_of(&self, context: &[TokenId]) -> Self::State;
    /// The state after appending `t` in state `s`.
    fn next_state(&self, s: &Self::State, t: TokenId) -> Self::State;
    /// Next-token log-probabilities in state `s` (normalised).
    fn state_log_probs(&self, s: &Self::State) -> Vec<f64>;
}

/// Sentinel for "no transition" in [`Dfa::trans`].
pub const DEAD: u32 = u32::MAX;

/// A deterministic finite automaton over a token vocabulary with an EOS
/// token (EOS ends the string; it has no transition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dfa {
    /// Number of states `0..num_states`.
    pub num_states: usize,
    /// Size of the token vocabulary (EOS included).
    pub vocab_size: usize,
    /// The EOS token (no transition; allowed in accepting states).
    pub eos: TokenId,
    /// The start state.
    pub start: u32,
    /// `accepting[q]`: `q` ends a member.
    pub accepting: Vec<bool>,
    /// `trans[q * vocab_size + t]`: next state or [`DEAD`].
    pub trans: Vec<u32>,
    /// `live[q]`: some accepting state is reachable from `q`.
    live: Vec<bool>,
    /// `masks[q]`: the tokens with a transition from `q` to a live state,
    /// plus EOS when `q` accepts — the constraint's mask in state `q`,
    /// precomputed so `fill_mask` is a word copy, not a `|V|` scan.
    masks: Vec<TokenSet>,
    /// `groups[q]`: the non-EOS tokens of `masks[q]` grouped by successor
    /// state, `(r, tokens)` in increasing `r`; built on first use of `q`
    /// (one pass over its transition row).
    groups: LazyPerState<Vec<SuccessorGroup>>,
    /// `sparse[q]`: the members of `masks[q]` in increasing order when
    /// they are at most [`SPARSE_FRACTION`] of the vocabulary (`None`
    /// otherwise); built on first use of `q` (one pass over the mask).
    sparse: LazyPerState<Option<Vec<TokenId>>>,
}

/// A state's mask is listed sparsely ([`Dfa::allowed`]) when it has at most
/// `|V| / SPARSE_FRACTION` members: below that a list is cheaper to sum
/// than a pass over the `|V|/64` mask words.
pub const SPARSE_FRACTION: usize = 32;

/// Per-state values built on first use (`OnceLock`, so a shared `Dfa` fills
/// them from any thread): caches derived from `trans` and `masks`, so they
/// take no part in equality.
#[derive(Debug, Clone)]
struct LazyPerState<T>(Vec<std::sync::OnceLock<T>>);

impl<T> LazyPerState<T> {
    fn new(n: usize) -> Self {
        LazyPerState((0..n).map(|_| std::sync::OnceLock::new()).collect())
    }
}

/// A successor state and the tokens that lead to it.
type SuccessorGroup = (u32, Vec<TokenId>);

impl<T> PartialEq for LazyPerState<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<T> Eq for LazyPerState<T> {}

impl Dfa {
    /// Builds a DFA and checks its tables; tokens without a transition are
    /// [`DEAD`]. States from which no accepting state is reachable are
    /// pruned from masks (so the constraint has no dead ends).
    pub fn new(
        num_states: usize,
        vocab_size: usize,
        eos: TokenId,
        start: u32,
        accepting: Vec<bool>,
        trans: Vec<u32>,
    ) -> Result<Self, PhiError> {
        if accepting.len() != num_states {
            return Err(PhiError::config(
                "accepting",
                format!("{} entries for {num_states} states", accepting.len()),
            ));
        }
        if trans.len() != num_states * vocab_size {
            return Err(PhiError::config(
                "trans",
                format!("{} entries, want {}", trans.len(), num_states * vocab_size),
            ));
        }
        if start as usize >= num_states {
            return Err(PhiError::config(
                "start",
                format!("state {start} of {num_states}"),
            ));
        }
        if eos as usize >= vocab_size {
            return Err(PhiError::BadToken {
                token: eos,
                vocab_size,
            });
        }
        if let Some((i, &q)) = trans
            .iter()
            .enumerate()
            .find(|(_, &q)| q != DEAD && q as usize >= num_states)
        {
            return Err(PhiError::config(
                "trans",
                format!("entry {i} points to state {q} of {num_states}"),
            ));
        }
        if (0..num_states).any(|q| trans[q * vocab_size + eos as usize] != DEAD) {
            return Err(PhiError::config("trans", "EOS must not have transitions"));
        }
        // Co-reachability: reverse BFS from the accepting states.
        let mut rev: Vec<Vec<u32>> = vec![Vec::new(); num_states];
        for q in 0..num_states {
            for t in 0..vocab_size {
                let r = trans[q * vocab_size + t];
                if r != DEAD {
                    rev[r as usize].push(q as u32);
                }
            }
        }
        let mut live = accepting.clone();
        let mut queue: Vec<u32> = (0..num_states as u32)
            .filter(|&q| accepting[q as usize])
            .collect();
        while let Some(r) = queue.pop() {
            for &q in &rev[r as usize] {
                if !live[q as usize] {
                    live[q as usize] = true;
                    queue.push(q);
                }
            }
        }
        let masks = (0..num_states)
            .map(|q| {
                let row = &trans[q * vocab_size..(q + 1) * vocab_size];
                let mut m = TokenSet::from_ids(
                    vocab_size,
                    row.iter()
                        .enumerate()
                        .filter(|&(_, &r)| r != DEAD && live[r as usize])
                        .map(|(t, _)| t as TokenId),
                );
                if accepting[q] {
                    m.insert(eos);
                }
                m
            })
            .collect();
        Ok(Dfa {
            num_states,
            vocab_size,
            eos,
            start,
            accepting,
            trans,
            live,
            masks,
            groups: LazyPerState::new(num_states),
            sparse: LazyPerState::new(num_states),
        })
    }

    /// The live transitions of `q` grouped by successor state: `(r,
    /// tokens)` in increasing `r`, tokens in increasing order (EOS
    /// excluded). Computed on the first call for `q` (one pass over its
    /// row, `O(|V|)`), then shared.
    pub fn successor_groups(&self, q: u32) -> &[(u32, Vec<TokenId>)] {
        let Some(cell) = self.groups.0.get(q as usize) else {
            return &[];
        };
        cell.get_or_init(|| {
            let q = q as usize;
            let row = &self.trans[q * self.vocab_size..(q + 1) * self.vocab_size];
            let mut by_state: std::collections::BTreeMap<u32, Vec<TokenId>> =
                std::collections::BTreeMap::new();
            for (t, &r) in row.iter().enumerate() {
                if r != DEAD && self.live[r as usize] {
                    by_state.entry(r).or_default().push(t as TokenId);
                }
            }
            by_state.into_iter().collect()
        })
    }

    /// The mask of state `q` (the constraint's allowed set there, EOS
    /// included when `q` accepts): its sorted member list when it has at
    /// most `|V| / SPARSE_FRACTION` members (built on the first call for
    /// `q`), the precomputed mask otherwise; `None` for a state out of range.
    pub fn allowed(&self, q: u32) -> Option<AllowedRef<'_>> {
        let mask = self.masks.get(q as usize)?;
        let list = self.sparse.0[q as usize].get_or_init(|| {
            (mask.count() <= self.vocab_size / SPARSE_FRACTION).then(|| mask.iter().collect())
        });
        Some(match list {
            Some(ids) => AllowedRef::Sparse(ids),
            None => AllowedRef::Dense(mask),
        })
    }

    /// The state after `t` from `q`, if it is live (`None` for EOS, ids
    /// outside the vocabulary and dead transitions). O(1).
    #[inline]
    pub fn step(&self, q: u32, t: TokenId) -> Option<u32> {
        if t as usize >= self.vocab_size {
            return None;
        }
        let r = self.trans[q as usize * self.vocab_size + t as usize];
        (r != DEAD && self.live[r as usize]).then_some(r)
    }

    /// Whether an accepting state is reachable from `q`.
    pub fn is_live(&self, q: u32) -> bool {
        self.live[q as usize]
    }
}

/// A [`Constraint`] that runs a [`Dfa`] (shared, immutable): a
/// [`Matcher`](zapspec_core::Matcher) whose mask is a copy of the state's
/// precomputed one, with the state as [`LookAhead`] mask key and one table
/// look-up per successor key. `O(1)` per advance and rollback.
#[derive(Debug, Clone)]
pub struct DfaConstraint {
    dfa: std::sync::Arc<Dfa>,
    states: Vec<u32>,
    finished: bool,
}

impl DfaConstraint {
    /// The matcher at the DFA's start state.
    pub fn new(dfa: std::sync::Arc<Dfa>) -> Self {
        let s = dfa.start;
        DfaConstraint {
            dfa,
            states: vec![s],
            finished: false,
        }
    }
    /// The shared automaton.
    pub fn dfa(&self) -> &std::sync::Arc<Dfa> {
        &self.dfa
    }
    /// The current DFA state.
    pub fn state(&self) -> u32 {
        *self.states.last().unwrap_or(&self.dfa.start)
    }
}

impl zapspec_core::Matcher for DfaConstraint {
    fn vocab_size(&self) -> usize {
        self.dfa.vocab_size
    }
    fn eos(&self) -> TokenId {
        self.dfa.eos
    }
    /// Copies the state's precomputed mask (`|V|/64` words; EOS included
    /// when the state accepts).
    fn fill_next(&mut self, mask: &mut TokenSet) {
        let m = &self.dfa.masks[self.state() as usize];
        if mask.universe() == m.universe() {
            mask.words_mut().copy_from_slice(m.words());
        } else {
            *mask = m.clone();
        }
    }
    fn step(&mut self, t: TokenId) -> Result<(), RejectReason> {
        if t as usize >= self.dfa.vocab_size {
            return Err(RejectReason::OutOfVocabulary);
        }
        let r = self
            .dfa
            .step(self.state(), t)
            .ok_or(RejectReason::NotAllowed)?;
        self.states.push(r);
        Ok(())
    }
    fn unstep(&mut self, n: usize) {
        self.states.truncate(self.states.len() - n);
    }
    fn num_steps(&self) -> usize {
        self.states.len() - 1
    }
    fn is_complete(&self) -> bool {
        self.dfa.accepting[self.state() as usize]
    }
    fn finished(&self) -> bool {
        self.finished
    }
    fn set_finished(&mut self, finished: bool) {
        self.finished = finished;
    }
}

impl LookAhead for DfaConstraint {
    fn mask_key(&self) -> Option<u64> {
        // the mask is a function of the DFA state
        Some(if self.finished {
            u64::MAX
        } else {
            self.state() as u64
        })
    }
    fn successor_mask_key(&self, t: TokenId) -> Option<u64> {
        if self.finished || t == self.dfa.eos {
            return None;
        }
        self.dfa.step(self.state(), t).map(u64::from)
    }
    fn for_each_successor_group(&self, f: &mut dyn FnMut(u64, &[TokenId])) -> bool {
        if self.finished {
            return true;
        }
        for (r, toks) in self.dfa.successor_groups(self.state()) {
            f(u64::from(*r), toks);
        }
        true
    }
    fn allowed_by_key(&self, key: u64) -> Option<AllowedRef<'_>> {
        if key == u64::MAX {
            // the finished state's key: nothing is allowed
            return Some(AllowedRef::Sparse(&[]));
        }
        self.dfa.allowed(u32::try_from(key).ok()?)
    }
}

/// Configuration of [`RegularDp::solve`].
#[derive(Debug, Clone, Copy)]
pub struct RegularDpConfig {
    /// Most product states before [`PhiError::TooLarge`].
    pub max_states: usize,
    /// Value-iteration tolerance (cyclic graphs only).
    pub tol: f64,
    /// Most value-iteration sweeps (cyclic graphs only).
    pub max_iters: usize,
}

impl Default for RegularDpConfig {
    fn default() -> Self {
        RegularDpConfig {
            max_states: 10_000_000,
            tol: 1e-15,
            max_iters: 100_000,
        }
    }
}

/// A hasher for `u64` keys (one SplitMix64 round), for the product-state
/// index; std's SipHash dominated the DP's run time.
#[derive(Default, Clone, Copy)]
struct U64Hasher(u64);

impl std::hash::Hasher for U64Hasher {
    fn finish(&self) -> u64 {
        zapspec_core::hash::splitmix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

impl std::fmt::Debug for U64Hasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "U64Hasher")
    }
}

type U64Map<V> = HashMap<u64, V, std::hash::BuildHasherDefault<U64Hasher>>;

/// `log Φ(q, s)` for every reachable (DFA state, model state) pair.
#[derive(Debug, Clone)]
pub struct RegularDp<S: Clone + Eq + Hash> {
    lm_index: HashMap<S, u32>,
    index: U64Map<u32>,
    /// `log Φ` per product state (index 0: the start pair).
    pub log_phi: Vec<f64>,
    /// Whether the product graph was acyclic (single backward pass).
    pub acyclic: bool,
    /// Value-iteration sweeps used (0 when acyclic).
    pub iterations: usize,
    /// Max |Φ(x) − Σ_u p(u|x) Φ(xu)| over states (the Doob-recursion
    /// residual reported in Table 8).
    pub residual: f64,
}

/// The reachable product graph, edges flattened.
struct Graph {
    eos_lp: Vec<f64>,
    start: Vec<u32>,
    edges: Vec<(f64, u32)>,
}

impl Graph {
    #[inline]
    fn eval(&self, a: usize, lphi: &[f64]) -> f64 {
        let es = &self.edges[self.start[a] as usize..self.start[a + 1] as usize];
        let mut m = self.eos_lp[a];
        for &(l, b) in es {
            m = m.max(l + lphi[b as usize]);
        }
        if m == f64::NEG_INFINITY {
            return m;
        }
        let mut s = (self.eos_lp[a] - m).exp();
        for &(l, b) in es {
            s += (l + lphi[b as usize] - m).exp();
        }
        clamp_log(m + s.ln())
    }
}

/// Model states seen so far: their log-probabilities and a lazily filled
/// transition table, so `state_log_probs`/`next_state` run once per state.
struct LmStates<S> {
    index: HashMap<S, u32>,
    states: Vec<S>,
    lp: Vec<Vec<f64>>,
    next: Vec<u32>,
    v: usize,
}

impl<S: Clone + Eq + Hash> LmStates<S> {
    fn id<L: FiniteStateLm<State = S>>(&mut self, lm: &L, s: S) -> Result<u32, PhiError> {
        if let Some(&i) = self.index.get(&s) {
            return Ok(i);
        }
        let lp = lm.state_log_probs(&s);
        if lp.len() != self.v {
            return Err(PhiError::VocabMismatch {
                what: "finite-state LM",
                got: lp.len(),
                want: self.v,
            });
        }
        let i = self.states.len() as u32;
        self.index.insert(s.clone(), i);
        self.states.push(s);
        self.lp.push(lp);
        self.next.extend(std::iter::repeat_n(u32::MAX, self.v));
        Ok(i)
    }

    fn step<L: FiniteStateLm<State = S>>(
        &mut self,
        lm: &L,
        l: u32,
        t: usize,
    ) -> Result<u32, PhiError> {
        let k = l as usize * self.v + t;
        if self.next[k] == u32::MAX {
            let s2 = lm.next_state(&self.states[l as usize], t as TokenId);
            let l2 = self.id(lm, s2)?;
            self.next[k] = l2;
        }
        Ok(self.next[k])
    }
}

impl<S: Clone + Eq + Hash> RegularDp<S> {
    /// Solves the DP from `(dfa.start, lm.state_of(prompt))`.
    pub fn solve<L: FiniteStateLm<State = S>>(
        dfa: &Dfa,
        lm: &L,
        prompt: &[TokenId],
        config: RegularDpConfig,
    ) -> Result<Self, PhiError> {
        let s0 = lm.state_of(prompt);
        Self::solve_from(dfa, lm, dfa.start, s0, config)
    }

    /// Solves the DP from an explicit start pair.
    pub fn solve_from<L: FiniteStateLm<State = S>>(
        dfa: &Dfa,
        lm: &L,
        q0: u32,
        s0: S,
        config: RegularDpConfig,
    ) -> Result<Self, PhiError> {
        let v = dfa.vocab_size;
        let mut lms = LmStates {
            index: HashMap::new(),
            states: Vec::new(),
            lp: Vec::new(),
            next: Vec::new(),
            v,
        };
        let l0 = lms.id(lm, s0)?;
        let key = |q: u32, l: u32| ((q as u64) << 32) | l as u64;
        let cap = dfa.num_states.min(1 << 16);
        let mut index: U64Map<u32> = U64Map::with_capacity_and_hasher(cap, Default::default());
        let mut keys: Vec<(u32, u32)> = Vec::with_capacity(cap);
        keys.push((q0, l0));
        index.insert(key(q0, l0), 0);
        let mut g = Graph {
            eos_lp: Vec::with_capacity(cap),
            start: Vec::with_capacity(cap + 1),
            edges: Vec::with_capacity(2 * cap),
        };
        g.start.push(0);
        let mut i = 0;
        while i < keys.len() {
            let (q, l) = keys[i];
            let eos_lp = if dfa.accepting[q as usize] {
                lms.lp[l as usize][dfa.eos as usize]
            } else {
                f64::NEG_INFINITY
            };
            g.eos_lp.push(eos_lp);
            for t in 0..v {
                let lpt = lms.lp[l as usize][t];
                if lpt == f64::NEG_INFINITY || t == dfa.eos as usize {
                    continue;
                }
                let Some(r) = dfa.step(q, t as TokenId) else {
                    continue;
                };
                let l2 = lms.step(lm, l, t)?;
                let k = key(r, l2);
                let j = match index.get(&k) {
                    Some(&j) => j,
                    None => {
                        let j = keys.len();
                        if j >= config.max_states {
                            return Err(PhiError::TooLarge {
                                limit: config.max_states,
                                depth: 0,
                            });
                        }
                        index.insert(k, j as u32);
                        keys.push((r, l2));
                        j as u32
                    }
                };
                g.edges.push((lpt, j));
            }
            g.start.push(g.edges.len() as u32);
            i += 1;
        }
        let n = keys.len();
        // Post-order DFS from the start: children are solved before their
        // parents; meeting a node still on the stack means a cycle.
        let mut log_phi = vec![f64::NEG_INFINITY; n];
        let mut color = vec![0u8; n];
        let mut stack: Vec<(u32, u32)> = vec![(0, g.start[0])];
        color[0] = 1;
        let mut acyclic = true;
        while let Some(top) = stack.last_mut() {
            let (a, e) = *top;
            if e < g.start[a as usize + 1] {
                top.1 += 1;
                let b = g.edges[e as usize].1;
                match color[b as usize] {
                    0 => {
                        color[b as usize] = 1;
                        stack.push((b, g.start[b as usize]));
                    }
                    1 => acyclic = false,
                    _ => {}
                }
            } else {
                log_phi[a as usize] = g.eval(a as usize, &log_phi);
                color[a as usize] = 2;
                stack.pop();
            }
        }
        let mut iterations = 0;
        if !acyclic {
            log_phi.iter_mut().for_each(|x| *x = f64::NEG_INFINITY);
            loop {
                iterations += 1;
                let mut change = 0.0f64;
                for a in 0..n {
                    let x = g.eval(a, &log_phi);
                    change = change.max((x.exp() - log_phi[a].exp()).abs());
                    log_phi[a] = x;
                }
                if change <= config.tol {
                    break;
                }
                if iterations >= config.max_iters {
                    return Err(PhiError::Unsupported(format!(
                        "value iteration did not converge in {iterations} sweeps (last change {change:e})"
                    )));
                }
            }
        }
        let residual = (0..n)
            .map(|a| (g.eval(a, &log_phi).exp() - log_phi[a].exp()).abs())
            .fold(0.0, f64::max);
        Ok(RegularDp {
            lm_index: lms.index,
            index,
            log_phi,
            acyclic,
            iterations,
            residual,
        })
    }

    /// `log Φ(q, s)`, `None` for a pair not reachable from the start.
    pub fn get(&self, q: u32, s: &S) -> Option<f64> {
        let l = *self.lm_index.get(s)?;
        self.index
            .get(&(((q as u64) << 32) | l as u64))
            .map(|&i| self.log_phi[i as usize])
    }

    /// Number of solved product states.
    pub fn num_states(&self) -> usize {
        self.log_phi.len()
    }
}

/// Tier 3 oracle for a [`DfaConstraint`] under a model that is both a
/// [`LanguageModel`] and a [`FiniteStateLm`]: solves [`RegularDp`] on first
/// use (from the start state and the prompt), then table look-ups.
#[derive(Debug, Clone)]
pub struct ExactRegular<S: Clone + Eq + Hash> {
    table: Option<(Vec<TokenId>, RegularDp<S>)>,
    config: RegularDpConfig,
}

impl<S: Clone + Eq + Hash> Default for ExactRegular<S> {
    fn default() -> Self {
        ExactRegular {
            table: None,
            config: RegularDpConfig::default(),
        }
    }
}

impl<S: Clone + Eq + Hash> ExactRegular<S> {
    /// An estimator whose DP is solved on first use.
    pub fn new(config: RegularDpConfig) -> Self {
        ExactRegular {
            config,
            ..Default::default()
        }
    }
    /// The solved DP, once solved.
    pub fn table(&self) -> Option<&RegularDp<S>> {
        self.table.as_ref().map(|(_, t)| t)
    }
}

/// Uses the model only through [`FiniteStateLm`] (no forwards); reports no
/// work.
impl<S, M> PhiEstimator<DfaConstraint, M> for ExactRegular<S>
where
    S: Clone + Eq + Hash,
    M: LanguageModel + FiniteStateLm<State = S>,
{
    fn name(&self) -> String {
        "Exact-DFA".into()
    }
    fn log_phi_into(
        &mut self,
        q: &PhiQuery<'_, DfaConstraint>,
        model: &mut M,
        out: &mut [f64],
    ) -> PhiResult {
        check_query(q, out)?;
        let full = self.full(q.constraint, model, q.logits)?;
        copy_on_mask(&full, q.mask, out);
        Ok(PhiCost::default())
    }
}

impl<S: Clone + Eq + Hash> ExactRegular<S> {
    /// `log Φ` of every candidate as a `|V|` vector (`-inf` elsewhere).
    fn full<M: LanguageModel + FiniteStateLm<State = S>>(
        &mut self,
        constraint: &DfaConstraint,
        model: &mut M,
        logits: &[f32],
    ) -> Result<Vec<f64>, PhiError> {
        let v = check_vocab(constraint, model, logits)?;
        let mut out = vec![f64::NEG_INFINITY; v];
        if constraint.is_finished() {
            return Ok(out);
        }
        let ctx = model.context().to_vec();
        let consumed = constraint.num_tokens();
        if consumed > ctx.len() {
            return Err(PhiError::Unsupported(
                "model context shorter than the constraint's prefix".into(),
            ));
        }
        let prompt = &ctx[..ctx.len() - consumed];
        if self
            .table
            .as_ref()
            .is_none_or(|(p, _)| p.as_slice() != prompt)
        {
            let t = RegularDp::solve(constraint.dfa(), &*model, prompt, self.config)?;
            self.table = Some((prompt.to_vec(), t));
        }
        let Some((_, t)) = &self.table else {
            return Err(PhiError::Unsupported("no table".into()));
        };
        let dfa = constraint.dfa();
        let q = constraint.state();
        let s = model.state_of(&ctx);
        for y in 0..v as TokenId {
            if y == dfa.eos {
                if dfa.accepting[q as usize] {
                    out[y as usize] = 0.0;
                }
            } else if let Some(r) = dfa.step(q, y) {
                let s2 = model.next_state(&s, y);
                // Pairs unreachable under the model (p = 0 edges) are
                // solved on demand from that pair.
                out[y as usize] = match t.get(r, &s2) {
                    Some(l) => l,
                    None => RegularDp::solve_from(dfa, &*model, r, s2, self.config)?.log_phi[0],
                };
            }
        }
        Ok(out)
    }
}
