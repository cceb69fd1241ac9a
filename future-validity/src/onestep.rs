//! Tier 1 (paper §5.2): one-step grammar look-ahead.
//!
//! * [`OneStepCheap`] — Def. 9, eq. (1): `Φ̂¹ˢ_t(y) = Σ_{u∈A_{t+1}(x<t y)} p_t(u)`,
//!   using the *current* logits `p_t` as a proxy for `p(· | x<t y)` (the
//!   context-independence approximation) and a forked constraint for the
//!   valid set after `y`. Zero neural forwards; the log-normaliser of `p_t`
//!   at most once per position (none in [`OneStepCheap::log_phi_into_shifted`],
//!   which the FVO-Spec decoder uses: its law cancels a per-position
//!   constant), successor masses cached per mask key
//!   ([`LookAhead::mask_key`], [`LookAhead::successor_mask_key`]) or summed
//!   over sparse lists ([`LookAhead::allowed_sparse`]); values on `A_t` only
//!   ([`OneStepCheap::log_phi_sparse`], [`OneStepCheap::log_phi_into`]).
//!   [`onestep_cheap_reference`] is the straightforward evaluation (a fresh
//!   mask per candidate) used as the tests' reference. With a
//!   [`CandidateCut`] ([`OneStepCheap::with_cut`]) only the head of `A_t`
//!   under `p_t` is scored — what a matcher without cheap successor keys
//!   (an Earley parser, one advance and rollback per candidate) needs when
//!   `A_t` is most of a real vocabulary.
//! * [`OneStepTrue`] — the idealised estimator of Prop. 10:
//!   `Φ̂ᵗʳᵘᵉ_t(y) = Σ_{u∈A_{t+1}(x<t y)} p(u | x<t y)`, one extra forward per
//!   non-EOS candidate. It always over-estimates Φ (eq. (2), App. E).
//!
//! EOS: a candidate EOS is in `A_t` only when `x<t` is a complete member, and
//! choosing it ends the string validly, so `Φ_t(EOS) = 1` exactly (§3.1,
//! "treating EOS as a valid terminal transition"); both estimators return
//! `log Φ̂ = 0` for it. A non-EOS candidate whose look-ahead set is empty is
//! a dead end: `log Φ̂ = -inf`.

use zapspec_core::{
    prob, AllowedRef, Constraint, LanguageModel, LookAhead, SuccessorClasses, TokenId, TokenSet,
};

use crate::cut::{CandidateCut, CutScratch, CutStats, RankedCut};
use crate::error::PhiError;
use crate::estimator::{
    check_compact, check_query, check_vocab, log_mass, valid_set, PhiCost, PhiEstimator, PhiQuery,
    PhiResult, ValidList,
};
pub use zapspec_kernels::lse::log_normaliser;
use zapspec_kernels::lse::{exp2_f64, ln_f64, log_sum_exp_max};

/// Tier 1a: Def. 9 with the current logits (no extra forward).
///
/// Cost per scored position (what makes it "cheap", §6.5): one vectorised
/// pass over the logits for the log-normaliser `log Σ_V exp l` (AVX2+FMA
/// when the CPU has it; skipped by [`OneStepCheap::log_phi_into_shifted`]
/// unless EOS is a candidate beside others), then for each candidate `y ∈ A_t` one `advance` /
/// `rollback` of a single fork and the mass of the successor set, found —
/// cheapest first — in a per-position cache keyed by
/// [`LookAhead::mask_key`] (a DFA state, a Dyck stack top), from a sparse
/// successor list ([`LookAhead::allowed_sparse`]: tries, Dyck), or from a
/// full mask. No `|V|`-sized allocation; [`OneStepCheap::log_phi_sparse`]
/// returns the values on `A_t` only.
///
/// With a [`CandidateCut`] ([`OneStepCheap::with_cut`]) only the head of
/// `A_t` under `p_t` gets a successor mass and the tail one stated value;
/// `OneStepCheap::new()` (the default cut) scores every candidate.
#[derive(Debug, Clone, Default)]
pub struct OneStepCheap {
    scratch: Scratch,
    cut: CandidateCut,
    head: HeadScratch,
    ranked: RankedCut,
    stats: CutStats,
    rank: RankScratch,
}

/// One class of the ranked look-ahead: a listed successor class, the
/// implicit rest, or a single candidate.
#[derive(Debug, Clone, Copy)]
struct Class {
    /// Listed class index, [`REST`], or (no classes) the candidate's index.
    src: u32,
    /// A member: the token a fork advances by.
    rep: TokenId,
    /// `Σ p_t` over the class relative to the candidates' largest logit;
    /// `NaN` for a single candidate (then `exp(lmx − lmax)`).
    mass: f64,
    /// The class's largest logit.
    lmx: f32,
    /// Its `log Φ̂` once scored, else `NaN`.
    value: f64,
}

const REST: u32 = u32::MAX;

/// Reused buffers of the ranked look-ahead.
#[derive(Debug, Clone, Default)]
struct RankScratch {
    classes: SuccessorClasses,
    /// Whether `classes` holds this position's classes
    /// ([`OneStepCheap::prepare_ranked`]).
    hooked: bool,
    table: Vec<Class>,
    listed: Vec<TokenId>,
    ids: Vec<TokenId>,
    logits: Vec<f32>,
}

/// Reused buffers of the candidate cut.
#[derive(Debug, Clone, Default)]
struct HeadScratch {
    cut: CutScratch,
    idx: Vec<usize>,
    ids: Vec<zapspec_core::TokenId>,
    logits: Vec<f32>,
    values: Vec<f64>,
    /// The candidates and their logits of a caller that passed a mask.
    all_ids: Vec<zapspec_core::TokenId>,
    all_logits: Vec<f32>,
}

/// Reused buffers of [`OneStepCheap`] (no allocation per call once warm).
#[derive(Debug, Clone, Default)]
struct Scratch {
    list: Vec<zapspec_core::TokenId>,
    next: Option<TokenSet>,
    /// Logits of a large successor set, gathered for the vectorised sum.
    gather: Vec<f32>,
    /// `(candidate, log Φ̂)` in token order from a whole-set walk.
    pairs: Vec<(zapspec_core::TokenId, f64)>,
    /// Direct-mapped cache `(generation, key, log mass)` of successor-set
    /// masses at the current position.
    cache: Vec<(u64, u64, f64)>,
    generation: u64,
    /// `(key, log mass)` of the successor groups at this position.
    masses: Vec<(u64, f64)>,
}

const CACHE_SLOTS: usize = 256;

/// A caller of [`OneStepCheap`]'s loop that takes the values in any
/// order (and keeps the last of repeated writes): the candidate set, and
/// its logits in token order when the caller gathered them.
#[derive(Clone, Copy)]
struct AnyOrder<'a> {
    mask: &'a TokenSet,
    logits: Option<&'a [f32]>,
}

/// Where [`OneStepCheap`]'s shifted values go: by token into a `|V|`
/// buffer, or by rank into an `|A_t|` one aligned with the sorted list
/// `ids` of `A_t` (whose logits the caller gathered).
enum Sink<'a> {
    Dense(&'a mut [f64]),
    Compact(ValidList<'a>, &'a mut [f64]),
}

impl OneStepCheap {
    /// The estimator, with empty scratch buffers; every candidate is
    /// scored.
    pub fn new() -> Self {
        Self::default()
    }

    /// The estimator scoring only the head of `A_t` chosen by `cut`, the
    /// tail getting the cut's [`TailValue`](crate::TailValue). Errors: a
    /// cut out of range ([`CandidateCut::validate`]).
    pub fn with_cut(cut: CandidateCut) -> Result<Self, PhiError> {
        cut.validate()?;
        Ok(OneStepCheap {
            cut,
            ..Self::default()
        })
    }

    /// The candidate cut.
    pub fn cut(&self) -> &CandidateCut {
        &self.cut
    }

    /// The estimator with the ranked look-ahead `ranked` (see
    /// [`RankedCut`]): classes of equal successor mask scored once each,
    /// in decreasing mass, stopped by a TV bound or, for a caller that
    /// needs only the argmax, exactly. Errors: a bound out of range
    /// ([`RankedCut::validate`]).
    pub fn with_ranked(ranked: RankedCut) -> Result<Self, PhiError> {
        ranked.validate()?;
        Ok(OneStepCheap {
            ranked,
            ..Self::default()
        })
    }

    /// [`Self::with_ranked`] with a TV bound `epsilon` per position
    /// ([`RankedCut::tv`]): the law it gives is within `epsilon` in total
    /// variation of the uncut estimator's at every position. Errors:
    /// `epsilon` outside `(0, 1)`.
    pub fn bounded(epsilon: f64) -> Result<Self, PhiError> {
        Self::with_ranked(RankedCut::tv(epsilon))
    }

    /// The ranked look-ahead's settings.
    pub fn ranked(&self) -> &RankedCut {
        &self.ranked
    }

    /// What the ranked look-ahead did since the estimator was made (or
    /// [`Self::reset_cut_stats`]).
    pub fn cut_stats(&self) -> CutStats {
        self.stats
    }

    /// Zeroes [`Self::cut_stats`].
    pub fn reset_cut_stats(&mut self) {
        self.stats = CutStats::default();
    }

    /// The ranked look-ahead over the candidates `ids` (increasing; the
    /// members of `mask`, EOS included when it is one) with logits
    /// `id_logits` (aligned): `emit(i, value)` for every index of `ids`,
    /// a default value first for all, then the values of the classes that
    /// differ from it. `Ok(None)` (nothing emitted) when it has nothing to
    /// offer here: no class hook, no stop that applies, or no finite mass.
    #[allow(clippy::too_many_arguments)]
    fn score_ranked<C: LookAhead>(
        &mut self,
        constraint: &C,
        ids: &[TokenId],
        id_logits: &[f32],
        logits: &[f32],
        norm: Norm,
        argmax: bool,
        mut emit: impl FnMut(usize, f64),
    ) -> Result<Option<u64>, PhiError> {
        let r = self.ranked;
        let argmax = argmax && r.exact_argmax;
        let n = ids.len().min(id_logits.len());
        let eos = constraint.eos();
        let eos_at = ids.binary_search(&eos).ok();
        if n <= 1 + usize::from(eos_at.is_some()) {
            return Ok(None);
        }
        let mut rk = std::mem::take(&mut self.rank);
        let hooked = std::mem::take(&mut rk.hooked);
        if !hooked && !argmax && r.tv_epsilon.is_none() {
            self.rank = rk;
            return Ok(None);
        }
        let (lse_c, lmax) = log_sum_exp_max(&id_logits[..n]);
        if !lse_c.is_finite() || !lmax.is_finite() {
            self.rank = rk;
            return Ok(None);
        }
        let lmax64 = lmax as f64;
        let rel = |l: f32| (l as f64 - lmax64).exp();
        // Σ p_t over the candidates, EOS's share, relative to exp(lmax)
        let total = (lse_c - lmax64).exp();
        let w_eos = eos_at.map_or(0.0, |i| rel(id_logits[i]));
        let table = &mut rk.table;
        table.clear();
        if hooked {
            let mut listed_mass = 0.0;
            rk.listed.clear();
            for (ci, toks) in rk.classes.iter().enumerate() {
                let (mut m, mut mx) = (0.0f64, f32::NEG_INFINITY);
                for &y in toks {
                    let l = logits.get(y as usize).copied().unwrap_or(f32::NEG_INFINITY);
                    m += rel(l);
                    mx = mx.max(l);
                }
                listed_mass += m;
                rk.listed.extend_from_slice(toks);
                if let Some(&rep) = toks.first() {
                    table.push(Class {
                        src: ci as u32,
                        rep,
                        mass: m,
                        lmx: mx,
                        value: f64::NAN,
                    });
                }
            }
            if let Some(rep) = rk.classes.rest() {
                rk.listed.sort_unstable();
                let listed = &rk.listed;
                let is_listed = |y: TokenId| listed.binary_search(&y).is_ok();
                // the rest's largest logit: the best candidate's unless it
                // is listed (then a pass over the unlisted ones)
                let top = (0..n)
                    .filter(|&i| Some(i) != eos_at)
                    .max_by(|&a, &b| id_logits[a].total_cmp(&id_logits[b]));
                let lmx = match top {
                    Some(i) if !is_listed(ids[i]) => id_logits[i],
                    _ => (0..n)
                        .filter(|&i| Some(i) != eos_at && !is_listed(ids[i]))
                        .map(|i| id_logits[i])
                        .fold(f32::NEG_INFINITY, f32::max),
                };
                table.push(Class {
                    src: REST,
                    rep,
                    mass: (total - w_eos - listed_mass).max(0.0),
                    lmx,
                    value: f64::NAN,
                });
            }
        } else {
            table.extend((0..n).filter(|&i| Some(i) != eos_at).map(|i| Class {
                src: i as u32,
                rep: ids[i],
                mass: f64::NAN,
                lmx: id_logits[i],
                value: f64::NAN,
            }));
        }
        // order: by mass for the TV stop, by largest logit for the argmax
        // stop (the same order for single candidates); ties towards the
        // smaller token
        let by_mass = hooked && !argmax;
        let cmp = |a: &Class, b: &Class| {
            let o = if by_mass {
                b.mass.total_cmp(&a.mass)
            } else {
                b.lmx.total_cmp(&a.lmx)
            };
            o.then(a.rep.cmp(&b.rep))
        };
        let sc = &mut self.scratch;
        let mut gather = std::mem::take(&mut sc.gather);
        if sc.cache.len() != CACHE_SLOTS {
            sc.cache = vec![(0, 0, 0.0); CACHE_SLOTS];
        }
        sc.generation += 1;
        let generation = sc.generation;
        let mut fork: Option<C> = None;
        let mut ops = 0u64;
        // `log Φ̂` values are `log Σ exp(l) − norm.lse`; Φ̂ ≤ 1 puts them at
        // most `upper` = lse_V − norm.lse (0 with the true normaliser)
        let mut upper: Option<f64> = norm.clamp.then_some(0.0);
        let (mut weight, mut scored_mass, mut best) = (w_eos, 0.0f64, w_eos);
        let mut sorted = 0usize;
        let mut chunk = 16usize;
        let mut scored = 0usize;
        let mut bound = 0.0f64;
        let (mut tv_stop, mut argmax_stop) = (false, false);
        let len = table.len();
        let mut result = Ok(());
        while scored < len {
            bring_next(table, scored, &mut sorted, &mut chunk, cmp);
            let c = table[scored];
            let f = fork.get_or_insert_with(|| constraint.fork());
            let v = match mass_after(f, c.rep, logits, norm, sc, &mut gather, generation) {
                Ok((v, k, _)) => {
                    ops += k;
                    v
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            table[scored].value = v;
            scored += 1;
            if scored == len {
                break;
            }
            let u = *upper.get_or_insert_with(|| log_sum_exp_max(logits).0 - norm.lse);
            let phi = (v - u).exp().min(1.0);
            let mass = if c.mass.is_nan() { rel(c.lmx) } else { c.mass };
            weight += mass * phi;
            scored_mass += mass;
            best = best.max(rel(c.lmx) * phi);
            if argmax {
                // every class left has its largest logit at most the next's
                bring_next(table, scored, &mut sorted, &mut chunk, cmp);
                if rel(table[scored].lmx) < best {
                    argmax_stop = true;
                    break;
                }
            } else if let Some(eps) = r.tv_epsilon {
                let left = (total - w_eos - scored_mass).max(0.0);
                let a = left / (weight + left);
                if a <= eps {
                    bound = a;
                    tv_stop = true;
                    break;
                }
            }
        }
        sc.gather = gather;
        if let Err(e) = result {
            self.rank = rk;
            return Err(e);
        }
        // the unscored classes' value, from the scored ones
        let tail = if scored < len {
            let weights = table[..scored].iter().map(|c| {
                let m = if c.mass.is_nan() { rel(c.lmx) } else { c.mass };
                (m, c.value)
            });
            self.cut.tail.of_head(weights)
        } else {
            f64::NEG_INFINITY
        };
        let value_of = |c: &Class| if c.value.is_nan() { tail } else { c.value };
        if hooked {
            let rest = table.iter().find(|c| c.src == REST).map(value_of);
            let default = rest.unwrap_or(tail);
            for i in 0..n {
                emit(i, default);
            }
            for c in table.iter().filter(|c| c.src != REST) {
                let v = value_of(c);
                if v == default {
                    continue;
                }
                for &y in rk.classes.class(c.src as usize) {
                    if let Ok(i) = ids.binary_search(&y) {
                        emit(i, v);
                    }
                }
            }
        } else {
            for i in 0..n {
                emit(i, tail);
            }
            for c in &table[..scored] {
                emit(c.src as usize, c.value);
            }
        }
        if let Some(i) = eos_at {
            // Φ(EOS) = 1; a set with EOS beside others is scored with the
            // true normaliser
            debug_assert!(norm.clamp);
            emit(i, 0.0);
        }
        let st = &mut self.stats;
        st.positions += 1;
        st.candidates += n as u64;
        st.classes += len as u64;
        st.scored += scored as u64;
        st.tv_stops += u64::from(tv_stop);
        st.argmax_stops += u64::from(argmax_stop);
        st.sum_tv_bound += bound;
        st.max_tv_bound = st.max_tv_bound.max(bound);
        self.rank = rk;
        Ok(Some(ops))
    }

    /// Whether the ranked look-ahead applies at this position (the
    /// constraint's classes, taken here, or a stop that applies), with
    /// no old-style [`CandidateCut`] set; [`Self::score_ranked`] follows.
    fn prepare_ranked<C: LookAhead>(
        &mut self,
        constraint: &C,
        mask: &TokenSet,
        argmax: bool,
    ) -> bool {
        let r = self.ranked;
        if !self.cut.is_off() {
            return false;
        }
        let hooked = r.classes && constraint.successor_classes(mask, &mut self.rank.classes);
        self.rank.hooked = hooked;
        hooked || (argmax && r.exact_argmax) || r.tv_epsilon.is_some()
    }

    /// [`Self::score_ranked`] for a caller holding the candidates as a
    /// mask: lists them and gathers their logits first; `emit(y, value)`
    /// by token.
    fn score_ranked_mask<C: LookAhead>(
        &mut self,
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        norm: Norm,
        argmax: bool,
        mut emit: impl FnMut(TokenId, f64),
    ) -> Result<Option<u64>, PhiError> {
        self.listed(Self::rank_bufs, mask, logits, |s, ids, id_logits| {
            s.score_ranked(constraint, ids, id_logits, logits, norm, argmax, |i, l| {
                emit(ids[i], l)
            })
        })
    }

    /// The ranked look-ahead's scratch for listed candidates.
    fn rank_bufs(&mut self) -> (&mut Vec<TokenId>, &mut Vec<f32>) {
        (&mut self.rank.ids, &mut self.rank.logits)
    }

    /// The candidate cut's scratch for listed candidates.
    fn head_bufs(&mut self) -> (&mut Vec<TokenId>, &mut Vec<f32>) {
        (&mut self.head.all_ids, &mut self.head.all_logits)
    }

    /// Calls `f` with `mask`'s members listed and their logits gathered
    /// (aligned), in the two scratch buffers `bufs` picks (taken out of
    /// `self` for the call and given back after).
    fn listed<R>(
        &mut self,
        bufs: fn(&mut Self) -> (&mut Vec<TokenId>, &mut Vec<f32>),
        mask: &TokenSet,
        logits: &[f32],
        f: impl FnOnce(&mut Self, &[TokenId], &[f32]) -> R,
    ) -> R {
        let (a, b) = bufs(self);
        let (mut ids, mut id_logits) = (std::mem::take(a), std::mem::take(b));
        ids.clear();
        ids.extend(mask.iter());
        gather_set(logits, mask, &mut id_logits);
        let r = f(self, &ids, &id_logits);
        let (a, b) = bufs(self);
        (*a, *b) = (ids, id_logits);
        r
    }

    /// With an active cut at this position: scores the head of the
    /// candidates `ids` (logits `id_logits`, aligned) with
    /// [`Self::score`] and calls `emit(i, value)` for every index `i` of
    /// `ids` — the tail value first for all, then the head's values.
    /// `Ok(None)` (nothing emitted) when the cut keeps every candidate.
    #[allow(clippy::too_many_arguments)]
    fn score_cut<C: LookAhead>(
        &mut self,
        constraint: &C,
        ids: &[zapspec_core::TokenId],
        id_logits: &[f32],
        logits: &[f32],
        norm: Norm,
        mut emit: impl FnMut(usize, f64),
    ) -> Result<Option<u64>, PhiError> {
        if self.cut.is_off() {
            return Ok(None);
        }
        let mut h = std::mem::take(&mut self.head);
        let Some(head) = self.cut.head(ids, id_logits, constraint.eos(), &mut h.cut) else {
            self.head = h;
            return Ok(None);
        };
        h.idx.clear();
        h.idx.extend_from_slice(head);
        h.ids.clear();
        h.ids.extend(h.idx.iter().map(|&i| ids[i]));
        h.logits.clear();
        h.logits.extend(h.idx.iter().map(|&i| id_logits[i]));
        h.values.clear();
        let values = &mut h.values;
        let r = self.score(
            constraint,
            h.ids.iter().copied(),
            None,
            logits,
            norm,
            |_, l| values.push(l),
        );
        let ops = match r {
            Ok(ops) => ops,
            Err(e) => {
                self.head = h;
                return Err(e);
            }
        };
        let tail = self.cut.tail_value(&h.logits, &h.values);
        for i in 0..ids.len() {
            emit(i, tail);
        }
        for (&i, &v) in h.idx.iter().zip(&h.values) {
            emit(i, v);
        }
        self.head = h;
        Ok(Some(ops))
    }

    /// [`Self::score_cut`] for a caller holding the candidates as a mask:
    /// lists them and gathers their logits first (skipped when the cut is
    /// off). `emit(y, value)` by token.
    fn score_cut_mask<C: LookAhead>(
        &mut self,
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        norm: Norm,
        mut emit: impl FnMut(zapspec_core::TokenId, f64),
    ) -> Result<Option<u64>, PhiError> {
        if self.cut.is_off() || (self.cut.top_p >= 1.0 && mask.count() <= self.cut.max_candidates) {
            return Ok(None);
        }
        self.listed(Self::head_bufs, mask, logits, |s, ids, id_logits| {
            s.score_cut(constraint, ids, id_logits, logits, norm, |i, l| {
                emit(ids[i], l)
            })
        })
    }

    /// Def. 9 on the valid set only: `out[i] = log Φ̂¹ˢ_t(ids[i])`, where
    /// `ids` is the constraint's current valid set `A_t` (any order; the
    /// decoder passes it in token order) and `logits` the model's
    /// next-token logits `p_t` at that prefix. EOS gets `0` (Φ(EOS) = 1); a
    /// candidate with an empty successor set gets `-inf`. `out` is cleared
    /// first. Errors: `logits` not of the constraint's vocabulary size; a
    /// candidate the constraint refuses.
    pub fn log_phi_sparse<C: LookAhead>(
        &mut self,
        constraint: &C,
        ids: &[zapspec_core::TokenId],
        logits: &[f32],
        out: &mut Vec<f64>,
    ) -> Result<(), PhiError> {
        out.clear();
        out.reserve(ids.len());
        if logits.len() != constraint.vocab_size() {
            return Err(logits_mismatch(logits.len(), constraint.vocab_size()));
        }
        let norm = Norm::full(logits);
        if !self.cut.is_off() {
            let id_logits: Vec<f32> = ids
                .iter()
                .map(|&y| logits.get(y as usize).copied().unwrap_or(f32::NEG_INFINITY))
                .collect();
            out.resize(ids.len(), f64::NEG_INFINITY);
            let cut =
                self.score_cut(constraint, ids, &id_logits, logits, norm, |i, l| out[i] = l)?;
            if cut.is_some() {
                return Ok(());
            }
            out.clear();
        }
        self.score(
            constraint,
            ids.iter().copied(),
            None,
            logits,
            norm,
            |_, l| out.push(l),
        )
        .map(|_| ())
    }

    /// Def. 9 up to an additive constant per position: for every
    /// `y ∈ mask`, `out[y] = log Φ̂¹ˢ_t(y) + c_t`, with `c_t` finite and the same for every
    /// candidate (other entries untouched). A verifier whose law is
    /// `p_t(y)Φ̂_t(y)` renormalised over `A_t` (FVO-Spec, §4) cancels `c_t`
    /// exactly, so this skips the one `O(|V|)` pass of the unshifted
    /// [`PhiEstimator::log_phi_into`]
    /// — the log-normaliser `log Σ_V exp l` of `p_t` — and writes the
    /// unnormalised `log Σ_{u∈A_{t+1}(x<t y)} exp l_u`, i.e.
    /// `c_t = log Σ_V exp l`; no pass over `A_t` or `V` beyond the
    /// candidates themselves.
    /// Only when EOS is a candidate beside others is the normaliser still
    /// computed (`Φ(EOS) = 1` pins its value to `c_t`); then `c_t = 0`, as
    /// when EOS is the only candidate.
    /// Returns `c_t` when it is known without the normaliser (`Some(0.0)`),
    /// `None` otherwise. Errors: `logits` or `out` not of the constraint's
    /// vocabulary size; a candidate the constraint refuses. This is
    /// [`PhiEstimator::log_phi_shifted`] plus the knowledge of `c_t`.
    pub fn log_phi_into_shifted<C: LookAhead>(
        &mut self,
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        out: &mut [f64],
    ) -> Result<Option<f64>, PhiError> {
        self.shifted(constraint, mask, logits, Sink::Dense(out), false)
            .map(|(c, _)| c)
    }

    /// [`Self::log_phi_into_shifted`] and the constraint operations it did.
    fn shifted<C: LookAhead>(
        &mut self,
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        out: Sink<'_>,
        argmax: bool,
    ) -> Result<(Option<f64>, u64), PhiError> {
        let v = constraint.vocab_size();
        if let Sink::Dense(out) = &out {
            if out.len() != v {
                return Err(PhiError::VocabMismatch {
                    what: "output buffer",
                    got: out.len(),
                    want: v,
                });
            }
        }
        if logits.len() != v {
            return Err(logits_mismatch(logits.len(), v));
        }
        let eos = constraint.eos();
        // No pass over A_t or V: the masses are taken relative to 0
        // (`c_t = log Σ_V exp l`); a set whose sum under- or overflows
        // there is re-summed relative to its own maximum.
        let shifted = Norm {
            lse: 0.0,
            lmax: 0.0,
            clamp: false,
        };
        let (norm, c) = if mask.contains(eos) {
            if mask.iter().nth(1).is_none() {
                // only EOS: its value 0 is exact and no mass is needed
                (shifted, Some(0.0))
            } else {
                (Norm::full(logits), Some(0.0))
            }
        } else {
            (shifted, None)
        };
        let ops = match out {
            Sink::Dense(out) => {
                if self.prepare_ranked(constraint, mask, argmax) {
                    if let Some(ops) =
                        self.score_ranked_mask(constraint, mask, logits, norm, argmax, |y, l| {
                            out[y as usize] = l
                        })?
                    {
                        return Ok((c, ops));
                    }
                }
                if let Some(ops) =
                    self.score_cut_mask(constraint, mask, logits, norm, |y, l| out[y as usize] = l)?
                {
                    return Ok((c, ops));
                }
                self.score(
                    constraint,
                    mask.iter(),
                    Some(AnyOrder { mask, logits: None }),
                    logits,
                    norm,
                    |y, l| out[y as usize] = l,
                )?
            }
            Sink::Compact(valid, out) => {
                let ids = valid.ids;
                if self.prepare_ranked(constraint, mask, argmax) {
                    if let Some(ops) = self.score_ranked(
                        constraint,
                        ids,
                        valid.logits,
                        logits,
                        norm,
                        argmax,
                        |i, l| out[i] = l,
                    )? {
                        return Ok((c, ops));
                    }
                }
                if let Some(ops) =
                    self.score_cut(constraint, ids, valid.logits, logits, norm, |i, l| {
                        out[i] = l
                    })?
                {
                    return Ok((c, ops));
                }
                // values come in token order (a cursor) except the groups
                // written over the largest one (a binary search each)
                let mut cur = 0usize;
                self.score(
                    constraint,
                    mask.iter(),
                    Some(AnyOrder {
                        mask,
                        logits: Some(valid.logits),
                    }),
                    logits,
                    norm,
                    |y, l| {
                        let i = if ids.get(cur) == Some(&y) {
                            cur
                        } else {
                            match ids.binary_search(&y) {
                                Ok(i) => i,
                                Err(_) => return,
                            }
                        };
                        out[i] = l;
                        cur = i + 1;
                    },
                )?
            }
        };
        Ok((c, ops))
    }

    /// The loop behind every entry point; `emit(y, log Φ̂(y))` per
    /// candidate, in the order of `ids` — or, when `dense` is the set `ids`
    /// iterates (a caller that takes the values in any order) and the
    /// constraint groups its candidates by successor
    /// ([`LookAhead::for_each_successor_group`]), in group order. Returns
    /// the constraint operations it did.
    fn score<C: LookAhead>(
        &mut self,
        constraint: &C,
        ids: impl Iterator<Item = zapspec_core::TokenId>,
        dense: Option<AnyOrder<'_>>,
        logits: &[f32],
        norm: Norm,
        mut emit: impl FnMut(zapspec_core::TokenId, f64),
    ) -> Result<u64, PhiError> {
        let eos = constraint.eos();
        let sc = &mut self.scratch;
        let mut gather = std::mem::take(&mut sc.gather);
        if sc.cache.len() != CACHE_SLOTS {
            sc.cache = vec![(0, 0, 0.0); CACHE_SLOTS];
        }
        sc.generation += 1;
        let generation = sc.generation;
        // Whole-set look-ahead (tries): every candidate's successor list in
        // one walk, no fork.
        let mut pairs = std::mem::take(&mut sc.pairs);
        pairs.clear();
        let walked = constraint.for_each_successor(&mut |y, next| {
            let lm = log_mass_of(logits, norm, &mut gather, next.len(), || {
                next.iter().copied()
            });
            pairs.push((y, lm));
        });
        if walked {
            let mut cursor = 0usize;
            let mut result = Ok(());
            for y in ids {
                if y == eos {
                    emit(y, 0.0);
                    continue;
                }
                // ids usually come in token order: try the cursor first
                let hit = if pairs.get(cursor).is_some_and(|p| p.0 == y) {
                    Some(cursor)
                } else {
                    pairs.binary_search_by_key(&y, |p| p.0).ok()
                };
                match hit {
                    Some(j) => {
                        emit(y, pairs[j].1);
                        cursor = j + 1;
                    }
                    None => {
                        result = Err(PhiError::Constraint(zapspec_core::Rejected {
                            token: y,
                            position: constraint.num_tokens(),
                            reason: zapspec_core::RejectReason::NotAllowed,
                        }));
                        break;
                    }
                }
            }
            let ops = pairs.len() as u64;
            sc.pairs = pairs;
            sc.gather = gather;
            return result.map(|()| ops);
        }
        sc.pairs = pairs;
        let mut fork: Option<C> = None;
        let mut ops = 0u64;
        // Grouped look-ahead (DFAs): one successor mass per group, one
        // write per candidate. Only for callers that take the values in
        // any order and keep the last of repeated writes (`dense`).
        if let Some(AnyOrder {
            mask,
            logits: own_logits,
        }) = dense
        {
            // When the caller's set is the constraint's own allowed set,
            // the groups partition it (less EOS) by contract: the largest
            // group's value is written over the whole set in one pass of
            // its words, the other groups' values over it.
            let own = constraint
                .mask_key()
                .and_then(|k| constraint.allowed_by_key(k))
                .is_some_and(|own| same_set(own, mask));
            if own {
                // the self-loop class's successor set is the caller's set:
                // its mass from the logits the caller gathered (the same
                // values, in the same order, as a gather would give)
                // (dense sets only: a sparse one is summed by another
                // routine, and is cheap)
                if let (Some(l), Some(k)) = (own_logits, constraint.mask_key()) {
                    let dense_own =
                        matches!(constraint.allowed_by_key(k), Some(AllowedRef::Dense(_)));
                    if dense_own && l.len() == mask.count() {
                        let lm = log_mass_of_gathered(l, norm);
                        sc.cache[slot_of(k)] = (generation, k, lm);
                    }
                }
                let mut masses = std::mem::take(&mut sc.masses);
                masses.clear();
                let mut big: Option<(usize, u64)> = None;
                let mut failed: Option<PhiError> = None;
                let grouped = constraint.for_each_successor_group(&mut |key, toks| {
                    let Some(&first) = toks.first() else {
                        return;
                    };
                    if failed.is_some() {
                        return;
                    }
                    match group_mass(
                        constraint,
                        &mut fork,
                        key,
                        first,
                        logits,
                        norm,
                        sc,
                        &mut gather,
                        generation,
                    ) {
                        Ok((lm, n)) => {
                            ops += n;
                            masses.push((key, lm));
                            if big.is_none_or(|(len, _)| toks.len() > len) {
                                big = Some((toks.len(), key));
                            }
                        }
                        Err(e) => failed = Some(e),
                    }
                });
                if grouped && failed.is_none() {
                    masses.sort_unstable_by_key(|m| m.0);
                    if let Some((_, bk)) = big {
                        let at = |k: u64| {
                            masses
                                .binary_search_by_key(&k, |m| m.0)
                                .map(|i| masses[i].1)
                        };
                        let blm = at(bk).unwrap_or(f64::NEG_INFINITY);
                        for y in mask.iter() {
                            emit(y, blm);
                        }
                        constraint.for_each_successor_group(&mut |key, toks| {
                            if key != bk {
                                let lm = at(key).unwrap_or(f64::NEG_INFINITY);
                                for &y in toks {
                                    emit(y, lm);
                                }
                            }
                        });
                    }
                    if mask.contains(eos) {
                        emit(eos, 0.0);
                    }
                    sc.masses = masses;
                    sc.gather = gather;
                    return Ok(ops);
                }
                sc.masses = masses;
            }
            // A subset of the allowed set (or a constraint that does not
            // know its own): the groups must cover exactly the
            // candidates, otherwise the per-candidate loop below redoes
            // the call (and reports a refused candidate).
            let mut emitted = 0usize;
            let mut failed: Option<PhiError> = None;
            let grouped = constraint.for_each_successor_group(&mut |key, toks| {
                let Some(&first) = toks.first() else {
                    return;
                };
                if failed.is_some() {
                    return;
                }
                let lm = match group_mass(
                    constraint,
                    &mut fork,
                    key,
                    first,
                    logits,
                    norm,
                    sc,
                    &mut gather,
                    generation,
                ) {
                    Ok((lm, n)) => {
                        ops += n;
                        lm
                    }
                    Err(e) => {
                        failed = Some(e);
                        return;
                    }
                };
                for &y in toks {
                    if mask.contains(y) {
                        emit(y, lm);
                        emitted += 1;
                    }
                }
            });
            if grouped && failed.is_none() {
                if mask.contains(eos) {
                    emit(eos, 0.0);
                    emitted += 1;
                }
                if emitted == mask.count() {
                    sc.gather = gather;
                    return Ok(ops);
                }
            }
        }
        // the last successor key and its value (runs of equal keys are common)
        let mut last: Option<(u64, f64)> = None;
        for y in ids {
            if y == eos {
                emit(y, 0.0);
                continue;
            }
            // Fast path: the successor's mask key without advancing.
            let pre_key = constraint.successor_mask_key(y);
            if let (Some(k), Some((lk, lv))) = (pre_key, last) {
                if k == lk {
                    emit(y, lv);
                    continue;
                }
            }
            if let Some(k) = pre_key {
                let slot = sc.cache[slot_of(k)];
                if slot.0 == generation && slot.1 == k {
                    last = Some((k, slot.2));
                    emit(y, slot.2);
                    continue;
                }
                if let Some(set) = constraint.allowed_by_key(k) {
                    let lm = log_mass_of_ref(logits, norm, &mut gather, set);
                    sc.cache[slot_of(k)] = (generation, k, lm);
                    last = Some((k, lm));
                    emit(y, lm);
                    continue;
                }
            }
            let f = fork.get_or_insert_with(|| constraint.fork());
            let (lm, n, key) = mass_after(f, y, logits, norm, sc, &mut gather, generation)?;
            ops += n;
            if let Some(k) = key {
                last = Some((k, lm));
            }
            emit(y, lm);
        }
        sc.gather = gather;
        Ok(ops)
    }
}

/// Makes `table[k]` the first of `table[k..]` in `cmp`'s order: when `k`
/// passes the sorted prefix, the next `chunk` classes (growing 4× each
/// time) are selected and sorted, so a look-ahead that stops after a few
/// classes never sorts all of them.
fn bring_next(
    table: &mut [Class],
    k: usize,
    sorted: &mut usize,
    chunk: &mut usize,
    cmp: impl Fn(&Class, &Class) -> std::cmp::Ordering + Copy,
) {
    if k < *sorted || k >= table.len() {
        return;
    }
    let rest = &mut table[k..];
    let m = (*chunk).min(rest.len());
    if m < rest.len() {
        rest.select_nth_unstable_by(m - 1, cmp);
    }
    rest[..m].sort_unstable_by(cmp);
    *sorted = k + m;
    *chunk = chunk.saturating_mul(4);
}

/// Whether a borrowed allowed set equals `mask`.
fn same_set(own: AllowedRef<'_>, mask: &TokenSet) -> bool {
    match own {
        AllowedRef::Dense(set) => set.universe() == mask.universe() && set.words() == mask.words(),
        AllowedRef::Sparse(ids) => {
            ids.len() == mask.count() && ids.iter().all(|&y| mask.contains(y))
        }
    }
}

/// The successor mass of a group of candidates that all reach mask key
/// `key` (`first` is one of them): from this position's cache, from the
/// matcher's tables ([`LookAhead::allowed_by_key`]: no fork), or by
/// advancing a fork by `first` ([`mass_after`]). Returns the log mass and
/// the constraint operations done.
#[allow(clippy::too_many_arguments)]
fn group_mass<C: LookAhead>(
    constraint: &C,
    fork: &mut Option<C>,
    key: u64,
    first: zapspec_core::TokenId,
    logits: &[f32],
    norm: Norm,
    sc: &mut Scratch,
    gather: &mut Vec<f32>,
    generation: u64,
) -> Result<(f64, u64), PhiError> {
    let slot = sc.cache[slot_of(key)];
    if slot.0 == generation && slot.1 == key {
        return Ok((slot.2, 0));
    }
    if let Some(set) = constraint.allowed_by_key(key) {
        let lm = log_mass_of_ref(logits, norm, gather, set);
        sc.cache[slot_of(key)] = (generation, key, lm);
        return Ok((lm, 0));
    }
    let f = fork.get_or_insert_with(|| constraint.fork());
    let (lm, n, _) = mass_after(f, first, logits, norm, sc, gather, generation)?;
    sc.cache[slot_of(key)] = (generation, key, lm);
    Ok((lm, n))
}

/// `log Σ_{u∈A_{t+1}(x<t y)} exp(l_u) − norm.lse` for one candidate `y`:
/// advances the fork `f` by `y`, takes the successor set sparsely
/// ([`LookAhead::allowed_sparse`]) or as a mask (cached per
/// [`LookAhead::mask_key`] in `sc.cache` for this `generation`), and
/// rolls back. Returns the log mass and the constraint operations done.
fn mass_after<C: LookAhead>(
    f: &mut C,
    y: zapspec_core::TokenId,
    logits: &[f32],
    norm: Norm,
    sc: &mut Scratch,
    gather: &mut Vec<f32>,
    generation: u64,
) -> Result<(f64, u64, Option<u64>), PhiError> {
    f.advance(y)?;
    let mut ops = 1u64;
    // A sparse successor list (tries, Dyck) is cheaper than any cache
    // look-up: successors of distinct trie nodes never repeat.
    let mut key = None;
    let lm = if f.allowed_sparse(&mut sc.list) {
        ops += 1;
        log_mass_of(logits, norm, gather, sc.list.len(), || {
            sc.list.iter().copied()
        })
    } else {
        key = f.mask_key();
        let cached = key.and_then(|k| {
            let slot = sc.cache[slot_of(k)];
            (slot.0 == generation && slot.1 == k).then_some(slot.2)
        });
        let borrowed = match (cached, key) {
            (None, Some(k)) => f
                .allowed_by_key(k)
                .map(|set| log_mass_of_ref(logits, norm, gather, set)),
            _ => None,
        };
        match cached.or(borrowed) {
            Some(lm) => {
                if let (None, Some(k)) = (cached, key) {
                    sc.cache[slot_of(k)] = (generation, k, lm);
                }
                lm
            }
            None => {
                ops += 1;
                let v = f.vocab_size();
                let next = sc.next.get_or_insert_with(|| TokenSet::new(v));
                if next.universe() != v {
                    *next = TokenSet::new(v);
                }
                f.fill_mask(next);
                let lm = log_mass_of_set(logits, norm, gather, next);
                if let Some(k) = key {
                    sc.cache[slot_of(k)] = (generation, k, lm);
                }
                lm
            }
        }
    };
    // Rollback cannot fail: we just advanced one token.
    let _ = f.rollback(1);
    Ok((lm, ops, key))
}

fn logits_mismatch(got: usize, want: usize) -> PhiError {
    PhiError::VocabMismatch {
        what: "logits",
        got,
        want,
    }
}

/// How successor masses are normalised at one position: `log Σ_{u∈S}
/// exp(l_u) − lse`, computed relative to `lmax`; `clamp` caps the result
/// at 0 (a probability; only valid when `lse` is the true normaliser).
#[derive(Debug, Clone, Copy)]
struct Norm {
    lse: f64,
    lmax: f32,
    clamp: bool,
}

impl Norm {
    /// The true log-normaliser of `p_t` and its max (one `O(|V|)` pass).
    fn full(logits: &[f32]) -> Self {
        let (lse, lmax) = log_sum_exp_max(logits);
        Norm {
            lse,
            lmax,
            clamp: true,
        }
    }
}

/// Sets at least this large are gathered into a contiguous buffer and
/// summed by the vectorised normaliser (a dense mask counts as large) (own max shift, f32 `exp2`, f64
/// block sums); smaller ones by the scalar f64 loop.
const GATHER_MIN: usize = 48;

#[inline]
fn slot_of(k: u64) -> usize {
    (zapspec_core::hash::splitmix64(k) as usize) & (CACHE_SLOTS - 1)
}

/// `log Σ_{u∈set} exp(l_u) − norm.lse` (with the true normaliser: `log
/// Σ_{u∈set} softmax(logits)_u`). A set of at least [`GATHER_MIN`] tokens
/// is gathered into `buf` and summed by the vectorised normaliser
/// relative to its own maximum (absolute error ~5·10⁻⁷ in log space);
/// a smaller one in one pass of [`exp2_f64`] relative to `norm.lmax`
/// (relative error < 10⁻⁸ per term), falling back to a shift by the set's
/// own maximum when that sum under- or overflows (below 1e-250, so the
/// terms `exp2_f64` flushes to 0 are negligible), so a set of mass 1e-300
/// stays finite and `norm.lmax` need not be the maximum. Empty or all `-inf`: `-inf`.
fn log_mass_of<I: Iterator<Item = zapspec_core::TokenId>>(
    logits: &[f32],
    norm: Norm,
    buf: &mut Vec<f32>,
    n: usize,
    set: impl Fn() -> I,
) -> f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    let finish = |x: f64| {
        if norm.clamp {
            crate::estimator::clamp_log(x)
        } else if x.is_nan() {
            f64::NEG_INFINITY
        } else {
            x
        }
    };
    if n == 1 {
        // one successor (a trie path, a forced token): its own logit
        return match set().next().and_then(|u| logits.get(u as usize)) {
            Some(&l) if l > f32::NEG_INFINITY => finish(l as f64 - norm.lse),
            _ => f64::NEG_INFINITY,
        };
    }
    if n >= GATHER_MIN {
        buf.clear();
        buf.extend(set().filter_map(|u| logits.get(u as usize).copied()));
        let (l, m) = log_sum_exp_max(buf);
        if m == f32::NEG_INFINITY || m.is_nan() {
            return f64::NEG_INFINITY;
        }
        return finish(l - norm.lse);
    }
    let lmax = norm.lmax as f64;
    let mut s = 0.0f64;
    for u in set() {
        if let Some(&l) = logits.get(u as usize) {
            s += exp2_f64((l as f64 - lmax) * LOG2E);
        }
    }
    // below 1e-250 terms under 2^-1022 (dropped by exp2_f64) could matter
    if s > 1e-250 && s.is_finite() {
        return finish(lmax + ln_f64(s) - norm.lse);
    }
    let mut m = f32::NEG_INFINITY;
    for u in set() {
        if let Some(&l) = logits.get(u as usize) {
            if l > m {
                m = l;
            }
        }
    }
    if m == f32::NEG_INFINITY || m.is_nan() {
        return f64::NEG_INFINITY;
    }
    if m == f32::INFINITY {
        return finish(f64::INFINITY);
    }
    let mut s = 0.0f64;
    for u in set() {
        if let Some(&l) = logits.get(u as usize) {
            s += exp2_f64((l as f64 - m as f64) * LOG2E);
        }
    }
    finish(m as f64 + s.ln() - norm.lse)
}

/// [`log_mass_of`] or [`log_mass_of_set`] for a set borrowed from a
/// matcher's tables ([`LookAhead::allowed_by_key`]).
fn log_mass_of_ref(logits: &[f32], norm: Norm, buf: &mut Vec<f32>, set: AllowedRef<'_>) -> f64 {
    match set {
        AllowedRef::Sparse(ids) => {
            log_mass_of(logits, norm, buf, ids.len(), || ids.iter().copied())
        }
        AllowedRef::Dense(set) => log_mass_of_set(logits, norm, buf, set),
    }
}

/// [`log_mass_of`] for a dense mask: the set's logits are gathered
/// ([`gather_set`]), then summed by the vectorised normaliser relative to
/// their own maximum.
fn log_mass_of_set(logits: &[f32], norm: Norm, buf: &mut Vec<f32>, set: &TokenSet) -> f64 {
    gather_set(logits, set, buf);
    log_mass_of_gathered(buf, norm)
}

/// The finish of [`log_mass_of_set`]: the vectorised normaliser over the
/// set's logits, already gathered (in token order).
fn log_mass_of_gathered(buf: &[f32], norm: Norm) -> f64 {
    let (l, m) = log_sum_exp_max(buf);
    if m == f32::NEG_INFINITY || m.is_nan() {
        return f64::NEG_INFINITY;
    }
    let x = l - norm.lse;
    if x.is_nan() {
        f64::NEG_INFINITY
    } else if norm.clamp {
        x.min(0.0)
    } else {
        x
    }
}

/// Replaces `buf` with the logits of `set`'s members, in token order
/// (`zapspec_kernels::gather`: vectorised for dense sets).
fn gather_set(logits: &[f32], set: &TokenSet, buf: &mut Vec<f32>) {
    zapspec_kernels::gather::gather_bits(logits, set.words(), set.count(), set.universe(), buf);
}

/// Shared loop of the reference evaluation and of [`OneStepTrue`]: for
/// every candidate `y ∈ mask` (the constraint's `A_t`), fork the
/// constraint, advance by `y`, score the next valid set with
/// `score(y, next_mask)` and hand the value to `emit(y, ·)` (EOS gets 0).
fn for_each_candidate<C: Constraint>(
    constraint: &C,
    mask: &TokenSet,
    cost: &mut PhiCost,
    mut score: impl FnMut(zapspec_core::TokenId, &TokenSet) -> Result<f64, PhiError>,
    mut emit: impl FnMut(zapspec_core::TokenId, f64),
) -> Result<(), PhiError> {
    let v = constraint.vocab_size();
    let eos = constraint.eos();
    let mut fork = constraint.fork();
    let mut next = TokenSet::new(v);
    for y in mask.iter() {
        if y == eos {
            emit(y, 0.0);
            continue;
        }
        fork.advance(y)?;
        fork.fill_mask(&mut next);
        cost.constraint_ops += 2;
        let r = score(y, &next);
        // Rollback cannot fail: we just advanced one token.
        let _ = fork.rollback(1);
        emit(y, r?);
    }
    Ok(())
}

/// The straightforward evaluation of Def. 9, eq. (1), kept as the
/// reference for tests and as the "before" baseline of the overhead
/// measurement: a fresh `|V|`-bit mask per candidate (fork, advance,
/// `fill_mask`), the mass in f64 with libm `exp`, the log-normaliser in f64,
/// and a `|V|`-sized result (`-inf` outside `A_t`).
pub fn onestep_cheap_reference<C: Constraint>(
    constraint: &C,
    logits: &[f32],
) -> Result<Vec<f64>, PhiError> {
    let v = constraint.vocab_size();
    if logits.len() != v {
        return Err(PhiError::VocabMismatch {
            what: "logits",
            got: logits.len(),
            want: v,
        });
    }
    let lp = prob::log_softmax(logits);
    let mut cost = PhiCost::default();
    let mut out = vec![f64::NEG_INFINITY; v];
    for_each_candidate(
        constraint,
        &valid_set(constraint),
        &mut cost,
        |_, next| Ok(log_mass(&lp, next)),
        |y, l| out[y as usize] = l,
    )?;
    Ok(out)
}

/// Def. 9 on the query's logits: no model is run, so any `M` works
/// ([`crate::NoModel`] included). [`PhiEstimator::log_phi_into`] writes the
/// values by token on `A_t` (no candidate list, no `|V|` result);
/// [`PhiEstimator::log_phi_shifted`] is [`OneStepCheap::log_phi_into_shifted`]
/// (no `O(|V|)` normaliser unless EOS is a candidate beside others). Reports
/// its constraint operations.
impl<C: LookAhead, M: LanguageModel> PhiEstimator<C, M> for OneStepCheap {
    fn name(&self) -> String {
        format!("OneStep-Cheap{}{}", self.cut.label(), self.ranked.label())
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, _: &mut M, out: &mut [f64]) -> PhiResult {
        check_query(q, out)?;
        let norm = Norm::full(q.logits);
        if self.prepare_ranked(q.constraint, q.mask, q.argmax_only) {
            if let Some(ops) = self.score_ranked_mask(
                q.constraint,
                q.mask,
                q.logits,
                norm,
                q.argmax_only,
                |y, l| out[y as usize] = l,
            )? {
                return Ok(PhiCost {
                    constraint_ops: ops,
                    ..PhiCost::default()
                });
            }
        }
        if let Some(ops) = self.score_cut_mask(q.constraint, q.mask, q.logits, norm, |y, l| {
            out[y as usize] = l
        })? {
            return Ok(PhiCost {
                constraint_ops: ops,
                ..PhiCost::default()
            });
        }
        let ops = self.score(
            q.constraint,
            q.mask.iter(),
            Some(AnyOrder {
                mask: q.mask,
                logits: None,
            }),
            q.logits,
            norm,
            |y, l| out[y as usize] = l,
        )?;
        Ok(PhiCost {
            constraint_ops: ops,
            ..PhiCost::default()
        })
    }
    fn log_phi_shifted(&mut self, q: &PhiQuery<'_, C>, _: &mut M, out: &mut [f64]) -> PhiResult {
        let (_, ops) = self.shifted(
            q.constraint,
            q.mask,
            q.logits,
            Sink::Dense(out),
            q.argmax_only,
        )?;
        Ok(PhiCost {
            constraint_ops: ops,
            ..PhiCost::default()
        })
    }
    fn log_phi_shifted_compact(
        &mut self,
        q: &PhiQuery<'_, C>,
        _: &mut M,
        valid: ValidList<'_>,
        out: &mut [f64],
    ) -> Option<PhiResult> {
        let r = check_compact(q, valid, out).and_then(|()| {
            self.shifted(
                q.constraint,
                q.mask,
                q.logits,
                Sink::Compact(valid, out),
                q.argmax_only,
            )
        });
        Some(r.map(|(_, ops)| PhiCost {
            constraint_ops: ops,
            ..PhiCost::default()
        }))
    }
}

/// Tier 1b: the true one-step estimator (Prop. 10), one forward per
/// non-EOS candidate on the model it is given (positioned at the prefix).
#[derive(Debug, Clone, Copy, Default)]
pub struct OneStepTrue;

impl OneStepTrue {
    /// The estimator.
    pub fn new() -> Self {
        OneStepTrue
    }
}

/// Reports one forward and two constraint operations per non-EOS candidate.
impl<C: Constraint, M: LanguageModel> PhiEstimator<C, M> for OneStepTrue {
    fn name(&self) -> String {
        "OneStep-True".into()
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult {
        check_vocab(q.constraint, model, q.logits)?;
        check_query(q, out)?;
        let mut cost = PhiCost::default();
        let base = model.context().len();
        let mut forwards = 0u64;
        let r = for_each_candidate(
            q.constraint,
            q.mask,
            &mut cost,
            |y, next| {
                forwards += 1;
                let rows = model.prefill(&[y]);
                let res = rows.map(|rows| {
                    let row: Vec<f32> = rows.row(0).to_vec();
                    log_mass(&prob::log_softmax(&row), next)
                });
                model.truncate(base);
                Ok(res?)
            },
            |y, l| out[y as usize] = l,
        );
        cost.forwards += forwards;
        r.map(|()| cost)
    }
}
