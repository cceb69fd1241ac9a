//! The budget language of App. H.4 ("Large regular-state stress test"):
//! `L_{n,K} = {x ∈ {0,1}ⁿ : Σ_t x_t ≤ K}` under an iid Bernoulli(p₁) model.
//!
//! The DFA has states `(t, c)` — position and ones used — so
//! `(n+1)(K+1)` states (496 for `L_{30,15}`), while the terminal support has
//! up to 6.1·10⁸ strings. Exact Φ is a [`RegularDp`] over the reachable
//! states; the closed form `Φ(t, c) = Pr[Bin(n−t, p₁) ≤ K−c]`
//! ([`closed_form_log_phi`]) is the independent reference.
//!
//! Exact terminal-law TV ([`grouped_tv`]) without enumerating strings:
//! strings with `c < K` ones are grouped by `c`; strings with `K` ones by
//! the position `τ` of the K-th one (after it only 0 is valid). Under μ*,
//! μ^proj and exact μ^Φ every string of a group has the same probability, so
//! the TV is `½ Σ_groups |M̂_g − M*_g|` exactly (for other kernels this is a
//! lower bound).
//!
//! [`summarize`] puts these together into one row of Table 8
//! ([`BudgetSummary`]; the paper's settings are [`TABLE8_SETTINGS`]); it is
//! the one implementation the Table 8 experiment and its snapshot test use.

use serde::Serialize;
use zapspec_core::{prob, LanguageModel, Logits, ModelError, TokenId};

use super::regular::{Dfa, FiniteStateLm, RegularDp, RegularDpConfig, DEAD};
use crate::error::PhiError;

/// `L_{n,K}`: tokens 0 and 1, EOS = 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetLanguage {
    /// String length `n`.
    pub n: usize,
    /// Budget `K`: most ones a member may hold.
    pub k: usize,
}

/// The EOS token of the budget vocabulary `{0, 1, EOS}`.
pub const BUDGET_EOS: TokenId = 2;

impl BudgetLanguage {
    /// `L_{n,K}`; `K > n` is a configuration error.
    pub fn new(n: usize, k: usize) -> Result<Self, PhiError> {
        if k > n {
            return Err(PhiError::config(
                "k",
                format!("budget {k} exceeds length {n}"),
            ));
        }
        Ok(BudgetLanguage { n, k })
    }

    /// State index of `(t, c)`.
    pub fn state(&self, t: usize, c: usize) -> u32 {
        (t * (self.k + 1) + c) as u32
    }

    /// The `(n+1)(K+1)`-state DFA (accepting iff `t = n`).
    pub fn dfa(&self) -> Dfa {
        let (n, k) = (self.n, self.k);
        let ns = (n + 1) * (k + 1);
        let mut trans = vec![DEAD; ns * 3];
        let mut acc = vec![false; ns];
        for t in 0..=n {
            for c in 0..=k {
                let q = self.state(t, c) as usize;
                acc[q] = t == n;
                if t < n {
                    trans[q * 3] = self.state(t + 1, c);
                    if c < k {
                        trans[q * 3 + 1] = self.state(t + 1, c + 1);
                    }
                }
            }
        }
        // Infallible: the tables are consistent by construction.
        Dfa::new(ns, 3, BUDGET_EOS, 0, acc, trans).expect("budget DFA")
    }

    /// Number of members, `Σ_{c≤K} C(n, c)`, exactly (`O(nK)` checked
    /// integer arithmetic); `None` when the count (or an intermediate
    /// product) does not fit in a `u128` — never a wrapped value.
    pub fn num_members(&self) -> Option<u128> {
        let mut total: u128 = 0;
        for c in 0..=self.k {
            let mut r: u128 = 1;
            for i in 0..c {
                r = r.checked_mul((self.n - i) as u128)? / (i + 1) as u128;
            }
            total = total.checked_add(r)?;
        }
        Some(total)
    }

    /// `ln |L_{n,K}| = ln Σ_{c≤K} C(n, c)`, finite for every `n`.
    pub fn ln_num_members(&self) -> f64 {
        let terms: Vec<f64> = (0..=self.k).map(|c| log_binom(self.n, c)).collect();
        prob::logsumexp(&terms)
    }

    /// Number of members, `Σ_{c≤K} C(n, c)`, in floating point: `+∞` once
    /// it exceeds `f64::MAX` (`n ≳ 1030`); [`Self::ln_num_members`] is
    /// finite there.
    pub fn num_strings(&self) -> f64 {
        (0..=self.k)
            .map(|c| log_binom(self.n, c).exp())
            .sum::<f64>()
            .round()
    }
}

/// An iid Bernoulli(p₁) model over `{0, 1}` that emits EOS exactly after
/// `n` bits (its state is the position, capped at `n`).
#[derive(Debug, Clone)]
pub struct BernoulliLm {
    /// Probability of token 1 at each of the first `n` positions.
    pub p1: f64,
    /// Number of bits before the forced EOS.
    pub n: usize,
    context: Vec<TokenId>,
    forwards: usize,
}

impl BernoulliLm {
    /// The model; `p1` must lie in `(0, 1)` ([`check_p1`]).
    pub fn new(p1: f64, n: usize) -> Result<Self, PhiError> {
        check_p1(p1)?;
        Ok(BernoulliLm {
            p1,
            n,
            context: Vec::new(),
            forwards: 0,
        })
    }
    /// Forward calls made so far (`prefill` + `next_logits`).
    pub fn forwards(&self) -> usize {
        self.forwards
    }
    fn logits_at(&self, t: usize) -> Vec<f32> {
        if t < self.n {
            vec![
                (1.0 - self.p1).ln() as f32,
                self.p1.ln() as f32,
                f32::NEG_INFINITY,
            ]
        } else {
            vec![f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0]
        }
    }
}

impl LanguageModel for BernoulliLm {
    fn vocab_size(&self) -> usize {
        3
    }
    fn context(&self) -> &[TokenId] {
        &self.context
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        if let Some(&token) = tokens.iter().find(|&&t| t > 2) {
            return Err(ModelError::TokenOutOfRange {
                token,
                vocab_size: 3,
            });
        }
        self.forwards += 1;
        let mut out = Logits::zeros((tokens.len(), 3));
        for (i, &t) in tokens.iter().enumerate() {
            self.context.push(t);
            let l = self.logits_at(self.context.len());
            out.row_mut(i).assign(&ndarray::ArrayView1::from(&l));
        }
        Ok(out)
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        self.forwards += 1;
        Ok(self.logits_at(self.context.len()))
    }
    fn truncate(&mut self, len: usize) {
        self.context.truncate(len);
    }
}

impl FiniteStateLm for BernoulliLm {
    type State = usize;
    fn state_of(&self, context: &[TokenId]) -> usize {
        context.len().min(self.n)
    }
    fn next_state(&self, s: &usize, _t: TokenId) -> usize {
        (s + 1).min(self.n)
    }
    fn state_log_probs(&self, s: &usize) -> Vec<f64> {
        if *s < self.n {
            vec![(-self.p1).ln_1p(), self.p1.ln(), f64::NEG_INFINITY]
        } else {
            vec![f64::NEG_INFINITY, f64::NEG_INFINITY, 0.0]
        }
    }
}

/// The domain of the Bernoulli parameter: `p₁ ∈ (0, 1)`, else a
/// [`PhiError::Config`] on field `p1`. At `p₁ = 1` (with `K < n`) no member
/// has mass (`Z = 0`, μ* undefined); `p₁ = 0` and non-numbers are refused
/// alike, so the model and the TVs take the same parameters.
pub fn check_p1(p1: f64) -> Result<(), PhiError> {
    if p1 > 0.0 && p1 < 1.0 {
        Ok(())
    } else {
        Err(PhiError::config("p1", format!("{p1} is not in (0, 1)")))
    }
}

/// `ln C(n, k)`.
pub fn log_binom(n: usize, k: usize) -> f64 {
    if k > n {
        return f64::NEG_INFINITY;
    }
    let k = k.min(n - k);
    (0..k)
        .map(|i| ((n - i) as f64).ln() - ((i + 1) as f64).ln())
        .sum()
}

/// `log Pr[Bin(m, p) ≤ r]`, in log space.
pub fn log_binom_cdf(m: usize, p: f64, r: usize) -> f64 {
    let terms: Vec<f64> = (0..=r.min(m))
        .map(|j| log_binom(m, j) + xlogy(j, p.ln()) + xlogy(m - j, (-p).ln_1p()))
        .collect();
    prob::logsumexp(&terms).min(0.0)
}

/// The closed form `log Φ(t, c) = log Pr[Bin(n−t, p₁) ≤ K−c]`.
pub fn closed_form_log_phi(lang: BudgetLanguage, p1: f64, t: usize, c: usize) -> f64 {
    if c > lang.k || t > lang.n {
        return f64::NEG_INFINITY;
    }
    log_binom_cdf(lang.n - t, p1, lang.k - c)
}

/// Exact Φ of `L_{n,K}` under Bernoulli(p₁): the [`RegularDp`] from the
/// empty prefix (App. H.4's "offline backward DP construction").
pub fn solve(lang: BudgetLanguage, p1: f64) -> Result<(Dfa, RegularDp<usize>), PhiError> {
    let dfa = lang.dfa();
    let lm = BernoulliLm::new(p1, lang.n)?;
    let dp = RegularDp::solve(&dfa, &lm, &[], RegularDpConfig::default())?;
    Ok((dfa, dp))
}

/// TV of a `(t, c)`-kernel law to μ* by grouping (see the module docs).
/// `kernel(t, c)` returns the log-probabilities `(ln q₀, ln q₁)` of bits 0
/// and 1 at state `(t, c)` with `c < K` (at `c = K` bit 0 is forced).
///
/// The forward group masses are carried in log space: in linear space a
/// group's mass under the kernel underflows to 0 long before its mass under
/// μ* does (`n = 60, K = 2, p₁ = 1 − 10⁻¹²`), and such a group still adds
/// its μ* mass to the TV. Each `|M̂_g − M*_g|` is then taken in linear space,
/// where both terms lie in `[0, 1]`. `O(nK)` time, `O(K)` memory. Fails
/// with [`PhiError::Config`] for `p₁ ∉ (0, 1)` ([`check_p1`]).
pub fn grouped_tv(
    lang: BudgetLanguage,
    p1: f64,
    kernel: impl Fn(usize, usize) -> (f64, f64),
) -> Result<f64, PhiError> {
    check_p1(p1)?;
    let (n, k) = (lang.n, lang.k);
    if k == 0 {
        // Only the all-zero string: every law puts mass 1 on it.
        return Ok(0.0);
    }
    let lz = log_binom_cdf(n, p1, k);
    let (lp, lq) = (p1.ln(), (-p1).ln_1p());
    // ln p^a q^b, with 0 · ln 0 = 0 (p₁ underflowing 1 − p₁ near 1).
    let pow = |a: usize, b: usize| xlogy(a, lp) + xlogy(b, lq);
    let gap = |got: f64, want: f64| (got.exp() - want.exp()).abs();
    // Forward log masses over (t, c) for c < K.
    let mut mass = vec![f64::NEG_INFINITY; k];
    mass[0] = 0.0;
    let mut s = 0.0;
    let mut next = vec![f64::NEG_INFINITY; k];
    for t in 0..n {
        next.fill(f64::NEG_INFINITY);
        for c in 0..k {
            if mass[c] == f64::NEG_INFINITY {
                continue; // unreachable at t: (t, c) has no mass under any law
            }
            let (l0, l1) = kernel(t, c);
            next[c] = prob::log_add_exp(next[c], mass[c] + l0);
            if c + 1 < k {
                next[c + 1] = prob::log_add_exp(next[c + 1], mass[c] + l1);
            } else {
                // Group H_τ, τ = t + 1: the K-th one at position t+1.
                let want = log_binom(t, k - 1) + pow(k, n - k) - lz;
                s += gap(mass[c] + l1, want);
            }
        }
        std::mem::swap(&mut mass, &mut next);
    }
    for (c, &m) in mass.iter().enumerate() {
        let want = log_binom(n, c) + pow(c, n - c) - lz;
        s += gap(m, want);
    }
    Ok((0.5 * s).min(1.0))
}

/// `a · ln x`, with `0 · ln 0 = 0`.
fn xlogy(a: usize, ln_x: f64) -> f64 {
    if a == 0 {
        0.0
    } else {
        a as f64 * ln_x
    }
}

/// `TV(μ^proj, μ*)` on `L_{n,K}` (Table 8, 4th column). Fails with
/// [`PhiError::Config`] for `p₁ ∉ (0, 1)`, as [`BernoulliLm::new`] does.
pub fn tv_proj_star(lang: BudgetLanguage, p1: f64) -> Result<f64, PhiError> {
    let (lp, lq) = (p1.ln(), (-p1).ln_1p());
    grouped_tv(lang, p1, |_, _| (lq, lp))
}

/// `TV(μ^Φ, μ*)` with Φ from the DP (Table 8, last column). Fails with
/// [`PhiError::Config`] for `p₁ ∉ (0, 1)`.
pub fn tv_phi_star(lang: BudgetLanguage, p1: f64, dp: &RegularDp<usize>) -> Result<f64, PhiError> {
    let phi = |t: usize, c: usize| dp.get(lang.state(t, c), &t).unwrap_or(f64::NEG_INFINITY);
    grouped_tv(lang, p1, |t, c| {
        let a = p1.ln() + phi(t + 1, c + 1);
        let b = (-p1).ln_1p() + phi(t + 1, c);
        let l = prob::log_add_exp(a, b);
        (b - l, a - l)
    })
}

/// The `(n, K, p₁)` settings of App. H.4's Table 8, in the paper's order.
pub const TABLE8_SETTINGS: [(usize, usize, f64); 8] = [
    (20, 10, 0.62),
    (22, 11, 0.65),
    (24, 12, 0.68),
    (24, 10, 0.65),
    (24, 8, 0.70),
    (26, 13, 0.68),
    (28, 14, 0.68),
    (30, 15, 0.70),
];

/// Exact summary of `L_{n,K}` under Bernoulli(p₁): one row of App. H.4's
/// Table 8, computed without sampling or enumerating strings.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetSummary {
    /// String length `n`.
    pub n: usize,
    /// Budget `K`.
    pub k: usize,
    /// Bernoulli parameter `p₁`.
    pub p1: f64,
    /// `|L_{n,K}| = Σ_{c≤K} C(n,c)`; `None` when it exceeds `u128`
    /// ([`BudgetLanguage::num_members`]).
    pub valid_strings: Option<u128>,
    /// `ln |L_{n,K}|`, finite when the count fits no integer or float.
    pub ln_valid_strings: f64,
    /// `(n+1)(K+1)` DFA states `(t, c)`.
    pub dfa_states: usize,
    /// `TV(μ^proj, μ*)` by [`grouped_tv`] ([`tv_proj_star`]).
    pub tv_proj_star: f64,
    /// `TV(μ^Φ, μ*)` with Φ from the DP ([`tv_phi_star`]).
    pub tv_phi_star: f64,
    /// `max_{(t,c)} |Σ_y π(y|t,c) − 1|` over the reachable states of the
    /// Doob kernel `π(1|t,c) = p₁Φ(t+1,c+1)/Φ(t,c)`.
    pub doob_residual: f64,
    /// Probability of token 1 at the root under local masking (`p₁`, or 0
    /// when `K = 0`).
    pub root_p1_proj: f64,
    /// Probability of token 1 at the root under the Doob kernel.
    pub root_p1_phi: f64,
}

/// Solves the DP ([`solve`]) and summarises `L_{n,K}` under Bernoulli(p₁)
/// exactly ([`BudgetSummary`]). Cost: the DP over `(n+1)(K+1)` states plus
/// two `O(nK)` grouped-TV sweeps.
pub fn summarize(lang: BudgetLanguage, p1: f64) -> Result<BudgetSummary, PhiError> {
    let (dfa, dp) = solve(lang, p1)?;
    let (n, k) = (lang.n, lang.k);
    let phi = |t: usize, c: usize| dp.get(lang.state(t, c), &t);
    let (l1, l0) = (p1.ln(), (-p1).ln_1p());
    let mut residual: f64 = 0.0;
    for t in 0..n {
        for c in 0..=k.min(t) {
            let Some(here) = phi(t, c) else { continue };
            let one = match phi(t + 1, c + 1) {
                Some(v) if c < k => (l1 + v - here).exp(),
                _ => 0.0,
            };
            let zero = phi(t + 1, c).map_or(0.0, |v| (l0 + v - here).exp());
            residual = residual.max((one + zero - 1.0).abs());
        }
    }
    let root_p1_phi = match (k > 0).then(|| phi(1, 1).zip(phi(0, 0))).flatten() {
        Some((a, b)) => (l1 + a - b).exp(),
        None => 0.0,
    };
    Ok(BudgetSummary {
        n,
        k,
        p1,
        valid_strings: lang.num_members(),
        ln_valid_strings: lang.ln_num_members(),
        dfa_states: dfa.num_states,
        tv_proj_star: tv_proj_star(lang, p1)?,
        tv_phi_star: tv_phi_star(lang, p1, &dp)?,
        doob_residual: residual,
        root_p1_proj: if k > 0 { p1 } else { 0.0 },
        root_p1_phi,
    })
}
