//! The prefix tree of a finite language under a model, enumerated once:
//! exact terminal laws (Appendix G "DP oracle", §6: "μ* by sequence
//! likelihood, μ^proj by local masking and renormalisation, exact-Φ by
//! backward dynamic programming").
//!
//! [`PrefixTree::enumerate`] (from the empty prefix) and
//! [`PrefixTree::enumerate_below`] (from any prefix) walk the masks of any
//! finite [`Constraint`] (a token trie, a bounded Dyck automaton)
//! depth-first and query the model once per prefix (`O(prefixes · |V|)`);
//! exact `log Φ` of every prefix follows by one backward sweep (the identity
//! of App. E, `Φ(x) = Σ_{y∈A} p(y|x)·Φ(xy)`, `Φ(x·EOS) = 1`). Any per-prefix
//! kernel's terminal law is then one forward sweep
//! ([`PrefixTree::log_law_by`]); [`TerminalLaws`](crate::metrics::TerminalLaws)
//! is built on it.
//!
//! The per-prefix expansion (mask and log-softmax) and the backward step are
//! shared with the memoised DP of [`Exact`](crate::exact::Exact), which walks
//! the same tree without storing it.

use std::collections::HashMap;

use zapspec_core::prob::{log_softmax, logsumexp};
use zapspec_core::{Constraint, LanguageModel, TokenId, TokenSet};

use crate::error::PhiError;
use crate::estimator::clamp_log;

/// Limits of the enumeration ([`Exact`](super::Exact) and [`PrefixTree`]).
#[derive(Debug, Clone, Copy)]
pub struct ExactConfig {
    /// Most prefixes one enumeration may visit before giving up with
    /// [`PhiError::TooLarge`].
    pub max_prefixes: usize,
    /// Longest suffix explored below the starting prefix.
    pub max_depth: usize,
}

impl Default for ExactConfig {
    fn default() -> Self {
        ExactConfig {
            max_prefixes: 2_000_000,
            max_depth: 4096,
        }
    }
}

/// A prefix waiting to be visited: (parent, token from it, matcher state, tokens).
type Pending<C> = (Option<usize>, Option<TokenId>, C, Vec<TokenId>);

/// One prefix of the language.
#[derive(Debug, Clone)]
pub struct Node {
    /// The node of the prefix one token shorter (`None` at the root).
    pub parent: Option<usize>,
    /// The token that leads here from the parent.
    pub token: Option<TokenId>,
    /// Prefix length.
    pub depth: usize,
    /// Non-EOS allowed tokens and the nodes they lead to.
    pub children: Vec<(TokenId, usize)>,
    /// EOS is allowed here (the prefix is a member).
    pub accepting: bool,
    /// The allowed set `A_t` at this prefix (EOS included when accepting).
    pub mask: TokenSet,
    /// Unmasked `log p_t(·)` of the target after this prefix.
    pub logp: Vec<f64>,
    /// The model's raw next-token logits after this prefix (what a
    /// verifier hands a Φ estimator).
    pub logits: Vec<f32>,
    /// `log p(prefix)` (unmasked chain rule).
    pub log_prefix: f64,
    /// `log Σ_{y∈A_t} p_t(y)` (the local normaliser `Z_p`).
    pub log_zp: f64,
    /// Exact `log Φ(prefix)`: the log-probability under `p` that sampling on
    /// from here ends in a member (EOS included).
    pub log_phi: f64,
}

/// The enumerated prefix tree of a finite language under a target model.
#[derive(Debug, Clone)]
pub struct PrefixTree<C> {
    nodes: Vec<Node>,
    states: Vec<C>,
    index: HashMap<Vec<TokenId>, usize>,
    members: Vec<usize>,
    eos: TokenId,
}

impl<C: Constraint> PrefixTree<C> {
    /// Enumerates every prefix reachable from `constraint` (normally one
    /// that has consumed nothing, with `lm` at the empty context), querying
    /// `lm` with [`LanguageModel::logits_for`] once per prefix: the same as
    /// [`enumerate_below`](Self::enumerate_below) with no depth limit. Fails
    /// with [`PhiError::TooLarge`] past `max_prefixes`, and with
    /// [`PhiError::EmptySupport`] on a dead end (a prefix with an empty mask)
    /// or when the language has zero mass under the model (`Z_C = 0`, so
    /// μ* is undefined; position 0).
    pub fn enumerate<M: LanguageModel>(
        constraint: &C,
        lm: &mut M,
        max_prefixes: usize,
    ) -> Result<Self, PhiError> {
        let limits = ExactConfig {
            max_prefixes,
            max_depth: usize::MAX,
        };
        Self::enumerate_below(constraint, lm, limits)
    }

    /// Enumerates the language below the current state of `constraint`,
    /// whose prefix is what `lm`'s context ends with: the root is the
    /// current prefix, node paths ([`tokens`](Self::tokens),
    /// [`node_of`](Self::node_of)) are the tokens after it, and `lm` is
    /// queried at its context followed by each path (one
    /// [`LanguageModel::logits_for`] per prefix) and left at its starting
    /// context. Fails with [`PhiError::TooLarge`] past
    /// `limits.max_prefixes` prefixes, [`PhiError::TooDeep`] below
    /// `limits.max_depth` tokens, and [`PhiError::EmptySupport`] on a dead
    /// end or a language of zero mass below the root (position 0, the
    /// root). Cost `O(prefixes · |V|)` time and memory.
    pub fn enumerate_below<M: LanguageModel>(
        constraint: &C,
        lm: &mut M,
        limits: ExactConfig,
    ) -> Result<Self, PhiError> {
        let vocab = constraint.vocab_size();
        if lm.vocab_size() != vocab {
            return Err(PhiError::VocabMismatch {
                what: "target model",
                got: lm.vocab_size(),
                want: vocab,
            });
        }
        let base = lm.context().len();
        let r = Self::walk(constraint, lm, limits);
        lm.truncate(base);
        r
    }

    /// The depth-first walk of [`enumerate_below`](Self::enumerate_below);
    /// leaves `lm` at the last prefix visited.
    fn walk<M: LanguageModel>(
        constraint: &C,
        lm: &mut M,
        limits: ExactConfig,
    ) -> Result<Self, PhiError> {
        let eos = constraint.eos();
        let mut ctx: Vec<TokenId> = lm.context().to_vec();
        let base = ctx.len();
        let mut tree = PrefixTree {
            nodes: Vec::new(),
            states: Vec::new(),
            index: HashMap::new(),
            members: Vec::new(),
            eos,
        };
        // depth-first, children pushed in reverse so members come out in token order
        let mut stack: Vec<Pending<C>> = vec![(None, None, constraint.clone(), Vec::new())];
        while let Some((parent, token, mut state, path)) = stack.pop() {
            if path.len() > limits.max_depth {
                return Err(PhiError::TooDeep {
                    limit: limits.max_depth,
                });
            }
            if tree.nodes.len() >= limits.max_prefixes {
                return Err(PhiError::TooLarge {
                    limit: limits.max_prefixes,
                    depth: path.len(),
                });
            }
            let id = tree.nodes.len();
            ctx.truncate(base);
            ctx.extend_from_slice(&path);
            let logits = lm.logits_for(&ctx)?;
            let (mask, logp) = expand(&mut state, &logits, "target logits")?;
            if mask.is_empty() {
                return Err(PhiError::EmptySupport {
                    position: path.len(),
                });
            }
            let allowed: Vec<f64> = mask.iter().map(|y| logp[y as usize]).collect();
            let log_zp = logsumexp(&allowed);
            let log_prefix = match (parent, token) {
                (Some(p), Some(t)) => tree.nodes[p].log_prefix + tree.nodes[p].logp[t as usize],
                _ => 0.0,
            };
            if let (Some(p), Some(t)) = (parent, token) {
                tree.nodes[p].children.push((t, id));
            }
            let accepting = mask.contains(eos);
            if accepting {
                tree.members.push(id);
            }
            let kids: Vec<TokenId> = mask.iter().filter(|&y| y != eos).collect();
            for &y in kids.iter().rev() {
                let mut s = state.fork();
                s.advance(y)?;
                let mut p = path.clone();
                p.push(y);
                stack.push((Some(id), Some(y), s, p));
            }
            tree.nodes.push(Node {
                parent,
                token,
                depth: path.len(),
                children: Vec::new(),
                accepting,
                mask,
                logp,
                logits,
                log_prefix,
                log_zp,
                log_phi: f64::NEG_INFINITY,
            });
            tree.index.insert(path, id);
            tree.states.push(state);
        }
        // children are sorted by token for lookups
        for n in &mut tree.nodes {
            n.children.sort_unstable_by_key(|&(t, _)| t);
        }
        // Backward DP (App. E): children have larger ids than their
        // parents, so one reverse sweep suffices.
        for id in (0..tree.nodes.len()).rev() {
            let n = &tree.nodes[id];
            let nodes = &tree.nodes;
            let v = log_phi_of(&n.logp, &n.mask, eos, |u| {
                // every non-EOS token of the mask has a child
                Ok(n.children
                    .binary_search_by_key(&u, |&(t, _)| t)
                    .map_or(f64::NEG_INFINITY, |i| nodes[n.children[i].1].log_phi))
            })?;
            tree.nodes[id].log_phi = v;
        }
        // Z = Φ(root) = 0: μ* (Def. 2) is undefined, refuse it as the
        // terminal laws do rather than hand out NaN laws.
        if tree.log_z() == f64::NEG_INFINITY {
            return Err(PhiError::EmptySupport { position: 0 });
        }
        Ok(tree)
    }

    /// Every prefix, in depth-first (token) order: parents before children.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The matcher state after node `id`'s prefix.
    pub fn state(&self, id: usize) -> &C {
        &self.states[id]
    }

    /// The constraint's EOS token.
    pub fn eos(&self) -> TokenId {
        self.eos
    }

    /// Number of members of the language.
    pub fn num_members(&self) -> usize {
        self.members.len()
    }

    /// The node of every member, in token order.
    pub fn member_nodes(&self) -> &[usize] {
        &self.members
    }

    /// The node reached by `prefix`, if it is a prefix of the language.
    pub fn node_of(&self, prefix: &[TokenId]) -> Option<usize> {
        self.index.get(prefix).copied()
    }

    /// Index (into [`member_nodes`](Self::member_nodes)) of a member.
    pub fn member_index(&self) -> HashMap<Vec<TokenId>, usize> {
        self.members
            .iter()
            .enumerate()
            .map(|(i, &n)| (self.tokens(n), i))
            .collect()
    }

    /// The tokens of node `id`'s prefix.
    pub fn tokens(&self, id: usize) -> Vec<TokenId> {
        let mut out = Vec::with_capacity(self.nodes[id].depth);
        let mut n = id;
        while let (Some(p), Some(t)) = (self.nodes[n].parent, self.nodes[n].token) {
            out.push(t);
            n = p;
        }
        out.reverse();
        out
    }

    /// Every member's tokens, in token order.
    pub fn members(&self) -> Vec<Vec<TokenId>> {
        self.members.iter().map(|&n| self.tokens(n)).collect()
    }

    /// `log Z_C = log Φ(root)`: the target's total mass on the language.
    pub fn log_z(&self) -> f64 {
        self.nodes[0].log_phi
    }

    /// `log μ*(x) = log p(x) + log p(EOS|x) − log Z_C` (Def. 2), per member.
    pub fn log_mu_star(&self) -> Vec<f64> {
        let z = self.log_z();
        self.members
            .iter()
            .map(|&n| self.nodes[n].log_prefix + self.nodes[n].logp[self.eos as usize] - z)
            .collect()
    }

    /// `log μ^proj(x) = Σ_t log p̃_t(x_t)` (Def. 1 by the chain rule), per member.
    pub fn log_mu_proj(&self) -> Vec<f64> {
        self.log_law_by(|n, _| {
            Some(
                n.logp
                    .iter()
                    .zip(0..)
                    .map(|(&l, y)| {
                        // zero valid mass (only below a −∞ edge): no mass on
                        if n.mask.contains(y) && n.log_zp > f64::NEG_INFINITY {
                            l - n.log_zp
                        } else {
                            f64::NEG_INFINITY
                        }
                    })
                    .collect(),
            )
        })
        .unwrap_or_default()
    }

    /// Terminal law from a per-prefix kernel: `kernel(node, id)` returns
    /// log-probabilities over the vocabulary at that prefix (`None` aborts);
    /// the result is `log` of the product of kernels along each member's
    /// path, EOS step included, in [`member_nodes`](Self::member_nodes)
    /// order. One forward sweep, `O(prefixes · |A_t|)` plus the kernels.
    pub fn log_law_by(
        &self,
        mut kernel: impl FnMut(&Node, usize) -> Option<Vec<f64>>,
    ) -> Option<Vec<f64>> {
        let mut log_reach = vec![f64::NEG_INFINITY; self.nodes.len()];
        let mut end = vec![f64::NEG_INFINITY; self.nodes.len()];
        log_reach[0] = 0.0;
        for id in 0..self.nodes.len() {
            let n = &self.nodes[id];
            // parents precede children in id order, so log_reach[id] is final
            let k = kernel(n, id)?;
            for &(t, c) in &n.children {
                log_reach[c] = log_reach[id] + k[t as usize];
            }
            if n.accepting {
                end[id] = log_reach[id] + k[self.eos as usize];
            }
        }
        Some(self.members.iter().map(|&m| end[m]).collect())
    }

    /// Exact per-candidate future validity at node `id`: `(y, log Φ_t(y))`
    /// for every allowed non-EOS token `y` (the child's `log Φ`) and
    /// `(EOS, 0)` when the prefix is a member. `O(|A_t|)`.
    pub fn exact_candidates(&self, id: usize) -> Vec<(TokenId, f64)> {
        let n = &self.nodes[id];
        let mut cands: Vec<(TokenId, f64)> = n
            .children
            .iter()
            .map(|&(t, c)| (t, self.nodes[c].log_phi))
            .collect();
        if n.accepting {
            cands.push((self.eos, 0.0));
        }
        cands
    }

    /// `Φ̄_t = E_{p̃_t}[Φ_t] = Z*/Z_p` at node `id` (§4, Appendix F).
    pub fn phi_bar(&self, id: usize) -> f64 {
        (self.nodes[id].log_phi - self.nodes[id].log_zp).exp()
    }

    /// The mean of `Φ̄_t` over the positions a μ^proj sampler visits: every
    /// prefix `x` weighted by its μ^proj reach probability,
    /// `Σ_x reach(x)·Φ̄(x) / Σ_x reach(x)` (the EOS step counts as a position).
    pub fn mean_phi_bar(&self) -> f64 {
        let mut reach = vec![0.0; self.nodes.len()];
        reach[0] = 1.0;
        let (mut num, mut den) = (0.0, 0.0);
        for id in 0..self.nodes.len() {
            let n = &self.nodes[id];
            num += reach[id] * self.phi_bar(id);
            den += reach[id];
            for &(t, c) in &n.children {
                reach[c] = reach[id] * (n.logp[t as usize] - n.log_zp).exp();
            }
        }
        if den > 0.0 {
            num / den
        } else {
            0.0
        }
    }
}

/// One prefix's expansion, shared by every walk of the prefix tree (this
/// module's [`PrefixTree`] and the memoised DP of
/// [`Exact`](crate::exact::Exact)): checks the logits against the
/// constraint's vocabulary (`what` names them in the error), and returns
/// the allowed set `A_t` and the unmasked `log p_t(·)`. `O(|V|)` plus one
/// mask computation.
pub(crate) fn expand<C: Constraint>(
    state: &mut C,
    logits: &[f32],
    what: &'static str,
) -> Result<(TokenSet, Vec<f64>), PhiError> {
    if logits.len() != state.vocab_size() {
        return Err(PhiError::VocabMismatch {
            what,
            got: logits.len(),
            want: state.vocab_size(),
        });
    }
    let mask = state.mask();
    Ok((mask, log_softmax(logits)))
}

/// The backward step of the exact DP (App. E), shared by [`PrefixTree`]
/// and [`Exact`](crate::exact::Exact):
/// `log Φ(x) = log Σ_{u∈A(x)} p(u|x)·Φ(xu)` with `Φ(x·EOS) = 1`, summed in
/// token order over the mask; `child(u)` gives `log Φ(xu)` and is asked only
/// for non-EOS tokens of non-zero probability. Clamped to `≤ 0` (`NaN` →
/// `−∞`). `O(|A_t|)` plus the children.
pub(crate) fn log_phi_of(
    logp: &[f64],
    mask: &TokenSet,
    eos: TokenId,
    mut child: impl FnMut(TokenId) -> Result<f64, PhiError>,
) -> Result<f64, PhiError> {
    let mut terms = Vec::with_capacity(mask.count());
    for u in mask.iter() {
        let l = logp[u as usize];
        if u == eos {
            terms.push(l);
        } else if l > f64::NEG_INFINITY {
            terms.push(l + child(u)?);
        }
    }
    Ok(clamp_log(logsumexp(&terms)))
}
