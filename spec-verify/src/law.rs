//! Exact terminal laws of a finite language, by enumerating its prefix tree
//! (Appendix G "DP oracle", §6: "μ* by sequence likelihood, μ^proj by local
//! masking and renormalisation, exact-Φ by backward dynamic programming").
//!
//! This is the independent reference the tests and experiments compare
//! sampled laws against. It walks the masks of any finite [`Constraint`]
//! (a token trie, a bounded Dyck automaton) and queries the target model once
//! per prefix.

use std::collections::HashMap;

use zapspec_core::prob::{log_softmax, logsumexp};
use zapspec_core::{Constraint, LanguageModel, TokenId, TokenSet};

use crate::phi::{target_log_law, PhiSource};
use crate::VerifyError;

/// A prefix waiting to be visited: (parent, token from it, matcher state, tokens).
type Pending<C> = (Option<usize>, Option<TokenId>, C, Vec<TokenId>);

/// One prefix of the language.
#[derive(Debug, Clone)]
pub struct Node {
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
    /// The target's raw next-token logits after this prefix (what the
    /// decoder hands a [`PhiSource`]).
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
    /// Enumerates every prefix reachable from `constraint` (which must have
    /// consumed nothing). Fails with [`VerifyError::TooLarge`] past
    /// `max_prefixes`, and on a dead end (a prefix with an empty mask).
    pub fn enumerate<M: LanguageModel>(
        constraint: &C,
        lm: &mut M,
        max_prefixes: usize,
    ) -> Result<Self, VerifyError> {
        let vocab = constraint.vocab_size();
        if lm.vocab_size() != vocab {
            return Err(VerifyError::VocabMismatch {
                what: "target model",
                got: lm.vocab_size(),
                want: vocab,
            });
        }
        let eos = constraint.eos();
        let mut tree = PrefixTree {
            nodes: Vec::new(),
            states: Vec::new(),
            index: HashMap::new(),
            members: Vec::new(),
            eos,
        };
        let mut paths: Vec<Vec<TokenId>> = Vec::new();
        // depth-first, children pushed in reverse so members come out in token order
        let mut stack: Vec<Pending<C>> = vec![(None, None, constraint.clone(), Vec::new())];
        while let Some((parent, token, mut state, path)) = stack.pop() {
            if tree.nodes.len() >= max_prefixes {
                return Err(VerifyError::TooLarge {
                    limit: max_prefixes,
                });
            }
            let id = tree.nodes.len();
            let mask = state.mask();
            if mask.is_empty() {
                return Err(VerifyError::DeadEnd {
                    position: path.len(),
                });
            }
            let logits = lm.logits_for(&path)?;
            if logits.len() != vocab {
                return Err(VerifyError::VocabMismatch {
                    what: "target logits",
                    got: logits.len(),
                    want: vocab,
                });
            }
            let logp = log_softmax(&logits);
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
            tree.index.insert(path.clone(), id);
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
            tree.states.push(state);
            paths.push(path);
        }
        // children are sorted by token for lookups
        for n in &mut tree.nodes {
            n.children.sort_unstable_by_key(|&(t, _)| t);
        }
        // Backward DP: Φ(x) = Σ_{y∈A} p(y|x)·Φ(xy), Φ(x·EOS) = 1. Children
        // have larger ids than their parents, so one reverse sweep suffices.
        for id in (0..tree.nodes.len()).rev() {
            let n = &tree.nodes[id];
            let mut terms: Vec<f64> = n
                .children
                .iter()
                .map(|&(t, c)| n.logp[t as usize] + tree.nodes[c].log_phi)
                .collect();
            if n.accepting {
                terms.push(n.logp[eos as usize]);
            }
            tree.nodes[id].log_phi = logsumexp(&terms);
        }
        Ok(tree)
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The matcher state after node `id`'s prefix.
    pub fn state(&self, id: usize) -> &C {
        &self.states[id]
    }

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
                        if n.mask.contains(y) {
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

    /// The terminal law of a sampler whose kernel at each prefix is the
    /// Φ̂-reweighted target `p_t·Φ̂_t/Z` (what FVO-Spec samples with `phi`).
    pub fn log_mu_phi<F: PhiSource<C>>(&self, phi: &mut F) -> Result<Vec<f64>, VerifyError> {
        let vocab = self.nodes[0].logp.len();
        let mut buf = vec![f64::NAN; vocab];
        let mut kernels: Vec<Vec<f64>> = Vec::with_capacity(self.nodes.len());
        for id in 0..self.nodes.len() {
            let n = &self.nodes[id];
            buf.iter_mut().for_each(|v| *v = f64::NAN);
            let prefix = self.tokens(id);
            phi.log_phi(&prefix, &self.states[id], &n.mask, &n.logits, &mut buf)
                .map_err(|reason| VerifyError::Phi {
                    position: n.depth,
                    reason,
                })?;
            if let Some(y) = n.mask.iter().find(|&y| buf[y as usize].is_nan()) {
                return Err(VerifyError::Phi {
                    position: n.depth,
                    reason: format!("no estimate for token {y}"),
                });
            }
            let k =
                target_log_law(&n.logp, &n.mask, Some(&buf)).ok_or(VerifyError::EmptySupport {
                    position: n.depth,
                    what: "Φ-reweighted target",
                })?;
            kernels.push(k);
        }
        self.log_law_by(|_, id| Some(kernels[id].clone()))
            .ok_or(VerifyError::EmptySupport {
                position: 0,
                what: "Φ-reweighted target",
            })
    }

    /// Terminal law from a per-prefix kernel (log-probabilities over the vocabulary).
    fn log_law_by(
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

    /// Exact per-candidate future validity `Φ_t(y)` at every prefix, as a
    /// [`PhiSource`] (the Tier-3 oracle of §5.5 for finite languages).
    pub fn exact_phi(&self) -> ExactPhi {
        let mut table = HashMap::with_capacity(self.nodes.len());
        for (id, n) in self.nodes.iter().enumerate() {
            let mut cands: Vec<(TokenId, f64)> = n
                .children
                .iter()
                .map(|&(t, c)| (t, self.nodes[c].log_phi))
                .collect();
            if n.accepting {
                cands.push((self.eos, 0.0));
            }
            table.insert(self.tokens(id), cands);
        }
        ExactPhi { table }
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

/// Exact Φ at every prefix of a finite language (from
/// [`PrefixTree::exact_phi`]). Asking about a prefix outside the language is
/// an error.
#[derive(Debug, Clone, Default)]
pub struct ExactPhi {
    table: HashMap<Vec<TokenId>, Vec<(TokenId, f64)>>,
}

impl<C: Constraint> PhiSource<C> for ExactPhi {
    fn name(&self) -> String {
        "Exact".into()
    }
    fn log_phi(
        &mut self,
        prefix: &[TokenId],
        _: &C,
        mask: &TokenSet,
        _: &[f32],
        out: &mut [f64],
    ) -> Result<(), String> {
        let cands = self
            .table
            .get(prefix)
            .ok_or_else(|| format!("prefix {prefix:?} is not in the enumerated language"))?;
        for &(t, l) in cands {
            if mask.contains(t) {
                out[t as usize] = l;
            }
        }
        Ok(())
    }
}
