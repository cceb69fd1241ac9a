//! Exact Φ for a finite language given as a token trie, under any
//! [`LanguageModel`]: backward DP over trie nodes (paper §5.5 "Finite
//! languages", App. H.8: "exact Φ computation requires backward DP over a
//! 4,232-node token trie").
//!
//! [`TrieTable::build`] queries the model once per trie node (the prompt
//! fixed), stores the next-token log-probabilities of the trie's edges, and
//! computes `log Φ(node)` bottom-up:
//! `Φ(n) = p(EOS | n)·1[n terminal] + Σ_{(u,c) child} p(u | n) Φ(c)`.
//! [`ExactTrie`] then answers every decoding position by table look-up.

use std::sync::Arc;

use crate::lang::{TokenTrie, TrieConstraint};
use zapspec_core::{prob, Constraint, LanguageModel, TokenId};

use crate::error::PhiError;
use crate::estimator::{
    check_query, check_vocab, clamp_log, copy_on_mask, PhiCost, PhiEstimator, PhiQuery, PhiResult,
};

/// Model probabilities on a trie and the exact Φ of every node.
#[derive(Debug, Clone)]
pub struct TrieTable {
    /// The finite language.
    pub trie: Arc<TokenTrie>,
    /// The prompt (model context before the first constrained token).
    pub prompt: Vec<TokenId>,
    /// The EOS token.
    pub eos: TokenId,
    /// `log p(u | node)` for every child edge `u`, in trie order.
    pub edge_logp: Vec<Vec<(TokenId, f64)>>,
    /// `log p(EOS | node)`.
    pub eos_logp: Vec<f64>,
    /// `log Σ_{u ∈ A(node)} p(u | node)`: the valid mass at the node.
    pub log_valid_mass: Vec<f64>,
    /// `log Φ(node)` (exact).
    pub log_phi: Vec<f64>,
    /// Model forwards spent building the table.
    pub forwards: u64,
}

impl TrieTable {
    /// Queries `model` at every node of `trie` (context = `prompt` ++ node
    /// path), restoring the model's context afterwards.
    pub fn build<M: LanguageModel>(
        trie: Arc<TokenTrie>,
        eos: TokenId,
        model: &mut M,
        prompt: &[TokenId],
    ) -> Result<Self, PhiError> {
        let n = trie.num_nodes();
        let saved: Vec<TokenId> = model.context().to_vec();
        let v = model.vocab_size();
        if eos as usize >= v {
            return Err(PhiError::BadToken {
                token: eos,
                vocab_size: v,
            });
        }
        let mut t = TrieTable {
            trie: trie.clone(),
            prompt: prompt.to_vec(),
            eos,
            edge_logp: vec![Vec::new(); n],
            eos_logp: vec![f64::NEG_INFINITY; n],
            log_valid_mass: vec![f64::NEG_INFINITY; n],
            log_phi: vec![f64::NEG_INFINITY; n],
            forwards: 0,
        };
        let res = t.fill(model, prompt);
        // Restore the caller's context whatever happened.
        let common = model
            .context()
            .iter()
            .zip(&saved)
            .take_while(|(a, b)| a == b)
            .count();
        model.truncate(common);
        if common < saved.len() {
            model.prefill(&saved[common..])?;
        }
        res?;
        Ok(t)
    }

    fn fill<M: LanguageModel>(
        &mut self,
        model: &mut M,
        prompt: &[TokenId],
    ) -> Result<(), PhiError> {
        let root_logits = model.logits_for(prompt)?;
        self.forwards += 1;
        let root = self.trie.root();
        self.visit(model, root, &root_logits)
    }

    /// Records the edge probabilities at `node` (the model's context is the
    /// node's path), recurses into the children (one forward each), then
    /// computes `log Φ(node)` from theirs.
    fn visit<M: LanguageModel>(
        &mut self,
        model: &mut M,
        node: usize,
        logits: &[f32],
    ) -> Result<(), PhiError> {
        let v = model.vocab_size();
        if logits.len() != v {
            return Err(PhiError::VocabMismatch {
                what: "logits",
                got: logits.len(),
                want: v,
            });
        }
        let lp = prob::log_softmax(logits);
        let mut mass = Vec::new();
        if self.trie.is_terminal(node) {
            self.eos_logp[node] = lp[self.eos as usize];
            mass.push(lp[self.eos as usize]);
        }
        let children: Vec<(TokenId, usize)> = self.trie.children(node).collect();
        let mut edges = Vec::with_capacity(children.len());
        for &(u, _) in &children {
            if u as usize >= v || u == self.eos {
                return Err(PhiError::BadToken {
                    token: u,
                    vocab_size: v,
                });
            }
            edges.push((u, lp[u as usize]));
            mass.push(lp[u as usize]);
        }
        self.log_valid_mass[node] = clamp_log(prob::logsumexp(&mass));
        let base = model.context().len();
        let mut terms = Vec::with_capacity(children.len() + 1);
        if self.trie.is_terminal(node) {
            terms.push(self.eos_logp[node]);
        }
        for (&(u, c), &(_, lpu)) in children.iter().zip(&edges) {
            let rows = model.prefill(&[u]);
            self.forwards += 1;
            let r = match rows {
                Ok(rows) => {
                    let row: Vec<f32> = rows.row(0).to_vec();
                    self.visit(model, c, &row)
                }
                Err(e) => Err(e.into()),
            };
            model.truncate(base);
            r?;
            terms.push(lpu + self.log_phi[c]);
        }
        self.edge_logp[node] = edges;
        self.log_phi[node] = clamp_log(prob::logsumexp(&terms));
        Ok(())
    }

    /// `log Φ_t(y)` for every token at `node` (`-inf` outside the node's
    /// valid set, `0` for EOS at a terminal node).
    pub fn candidates(&self, node: usize, vocab: usize) -> Vec<f64> {
        let mut out = vec![f64::NEG_INFINITY; vocab];
        for (u, c) in self.trie.children(node) {
            if (u as usize) < vocab {
                out[u as usize] = self.log_phi[c];
            }
        }
        if self.trie.is_terminal(node) && (self.eos as usize) < vocab {
            out[self.eos as usize] = 0.0;
        }
        out
    }

    /// `log Z_C = log Φ(root)`: the model's total mass on the language.
    pub fn log_z(&self) -> f64 {
        self.log_phi[self.trie.root()]
    }
}

/// Tier 3 oracle for finite token tries: a [`TrieTable`] built on first use
/// (and rebuilt when the trie or prompt changes), then table look-ups.
#[derive(Debug, Clone, Default)]
pub struct ExactTrie {
    table: Option<TrieTable>,
    /// Work of the call in progress (returned and zeroed at its end).
    work: PhiCost,
}

impl ExactTrie {
    /// An estimator whose table is built on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// An estimator with a prebuilt table.
    pub fn with_table(table: TrieTable) -> Self {
        ExactTrie {
            table: Some(table),
            work: PhiCost::default(),
        }
    }

    /// The current table, once built.
    pub fn table(&self) -> Option<&TrieTable> {
        self.table.as_ref()
    }

    fn ensure<M: LanguageModel>(
        &mut self,
        c: &TrieConstraint,
        model: &mut M,
    ) -> Result<&TrieTable, PhiError> {
        let ctx = model.context();
        let consumed = c.num_tokens() - usize::from(c.is_finished());
        if consumed > ctx.len() {
            return Err(PhiError::Unsupported(format!(
                "model context has {} tokens but the constraint consumed {consumed}",
                ctx.len()
            )));
        }
        let prompt = &ctx[..ctx.len() - consumed];
        let fresh = match &self.table {
            Some(t) => !Arc::ptr_eq(&t.trie, c.trie()) || t.prompt != prompt || t.eos != c.eos(),
            None => true,
        };
        if fresh {
            let prompt = prompt.to_vec();
            let t = TrieTable::build(c.trie().clone(), c.eos(), model, &prompt)?;
            self.work.forwards += t.forwards;
            self.table = Some(t);
        }
        self.table
            .as_ref()
            .ok_or_else(|| PhiError::Unsupported("no table".into()))
    }
}

/// Reports the forwards of a table (re)build, which happens on the first
/// call for a trie and prompt; later calls are look-ups.
impl<M: LanguageModel> PhiEstimator<TrieConstraint, M> for ExactTrie {
    fn name(&self) -> String {
        "Exact-Trie".into()
    }
    fn log_phi_into(
        &mut self,
        q: &PhiQuery<'_, TrieConstraint>,
        model: &mut M,
        out: &mut [f64],
    ) -> PhiResult {
        let v = check_vocab(q.constraint, model, q.logits)?;
        check_query(q, out)?;
        self.work = PhiCost::default();
        let full = if q.constraint.is_finished() {
            Ok(vec![f64::NEG_INFINITY; v])
        } else {
            let node = q.constraint.node();
            self.ensure(q.constraint, model)
                .map(|t| t.candidates(node, v))
        };
        let work = std::mem::take(&mut self.work);
        copy_on_mask(&full?, q.mask, out);
        Ok(work)
    }
}
