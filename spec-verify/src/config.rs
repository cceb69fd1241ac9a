//! Configuration of the speculate–verify–rollback loop (one struct with
//! `Default`, so an ablation is one field).

use serde::{Deserialize, Serialize};

/// Which accept/reject rule the verifier applies, and against which target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum VerifierKind {
    /// Leviathan rejection on the locally masked target `p̃_t` and draft
    /// `q̃_t` — the paper's LMS class (axioms B1–B3, §3.2). Its output law is
    /// `μ^proj` (Proposition 3); any Φ source is ignored.
    #[default]
    Leviathan,
    /// FVO-Spec (Proposition 6): Leviathan rejection against the
    /// Φ-reweighted target `p_t(y)·Φ̂_t(y)`, renormalised on the valid set
    /// `A_t`. With exact Φ its output law is `μ*`.
    FvoSpec,
    /// The equality-with-independent-target-sample diagnostic (Appendix H.7):
    /// accept the draft token when it equals an independent sample of the
    /// (Φ-reweighted) target, otherwise emit a fresh target sample. Its
    /// one-step marginal is `p_i (1 + q_i − ⟨p, q⟩)`, not `p_i` — it is
    /// biased towards draft-favoured tokens and exists to measure that bias.
    Equality,
}

impl VerifierKind {
    /// A label for tables.
    pub fn name(self) -> &'static str {
        match self {
            VerifierKind::Leviathan => "Leviathan (LMS)",
            VerifierKind::FvoSpec => "FVO-Spec",
            VerifierKind::Equality => "Equality diagnostic",
        }
    }

    /// True when the verifier's target is reweighted by Φ̂.
    pub fn uses_phi(self) -> bool {
        !matches!(self, VerifierKind::Leviathan)
    }
}

/// Sampled (temperature-1 ancestral) or greedy decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Mode {
    /// Drafts are sampled from `q̃_t`; the verifier is a rejection sampler.
    #[default]
    Sampled,
    /// Drafts are `argmax q̃_t`; a draft is accepted iff it is the argmax of
    /// the verifier's target; a rejection emits that argmax.
    Greedy,
}

/// Configuration of [`crate::SpeculativeDecoder`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecConfig {
    /// Draft block length γ (tokens drafted per round, ≥ 1).
    pub gamma: usize,
    /// Sampled or greedy decoding.
    pub mode: Mode,
    /// The accept/reject rule.
    pub verifier: VerifierKind,
    /// At most this many tokens are generated (EOS excluded); a sequence
    /// that has not ended by then stops with
    /// [`crate::StopReason::MaxTokens`].
    pub max_tokens: usize,
    /// Nucleus (top-p) truncation of the verifier's target law at every
    /// position, in (0, 1]: after the mask (and Φ̂'s reweighting) the
    /// smallest set of most probable valid tokens whose mass reaches
    /// `top_p` is kept and renormalised (ties broken towards the smaller
    /// token id). The loop's output law is then the truncated one, for
    /// every drafter; the drafts' own laws are untouched. 1 (the default)
    /// keeps the law as it is. Greedy decoding ignores it.
    #[serde(default = "one")]
    pub top_p: f64,
    /// Tree mode: `Some(shape)` verifies a draft tree per round
    /// ([`crate::Drafter::draft_tree`], depth ≤ γ, bounded by `shape`)
    /// with the walk of [`crate::tree`]; `None` (the default) verifies one
    /// linear block with the verifier's rejection rule.
    #[serde(default)]
    pub tree: Option<crate::tree::TreeConfig>,
    /// Tree mode, sampled: how a node whose children were *sampled* from
    /// a draft law ([`crate::DraftLaw::Dist`], e.g. a draft model's
    /// sampled tree) is verified — SpecInfer's residual rule (the default)
    /// or naive sampling ([`crate::TreeVerify`]). Both are exact;
    /// deterministic children are verified naively either way.
    #[serde(default)]
    pub tree_verify: crate::tree::TreeVerify,
    /// Grammar-forced tokens (jump-forward inside speculation, see
    /// [`crate::forced`]): where the constraint allows exactly one
    /// non-EOS token, it is committed without sampling and scored in the
    /// same target forward as the round's draft. On by default; the
    /// output law is unchanged either way.
    #[serde(default)]
    pub forced_tokens: ForcedTokens,
}

/// Whether (and how far) a round commits grammar-forced tokens before it
/// drafts ([`SpecConfig::forced_tokens`], [`crate::forced`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ForcedTokens {
    /// Commit forced tokens at all.
    pub enabled: bool,
    /// At most this many forced tokens per round (the rest are forced in
    /// the next round, or drafted and verified like any other token).
    pub max_len: usize,
}

impl ForcedTokens {
    /// No forcing: every token is drafted or sampled (plain speculative
    /// decoding, as in the FVO paper's figures).
    pub fn off() -> Self {
        ForcedTokens {
            enabled: false,
            max_len: 0,
        }
    }

    /// The most forced tokens a round takes (0 when disabled).
    pub fn limit(&self) -> usize {
        if self.enabled {
            self.max_len
        } else {
            0
        }
    }
}

impl Default for ForcedTokens {
    /// Enabled, at most 256 forced tokens per round.
    fn default() -> Self {
        ForcedTokens {
            enabled: true,
            max_len: 256,
        }
    }
}

fn one() -> f64 {
    1.0
}

impl Default for SpecConfig {
    fn default() -> Self {
        SpecConfig {
            gamma: 4,
            mode: Mode::Sampled,
            verifier: VerifierKind::Leviathan,
            max_tokens: 4096,
            top_p: 1.0,
            tree: None,
            tree_verify: crate::tree::TreeVerify::default(),
            forced_tokens: ForcedTokens::default(),
        }
    }
}

impl SpecConfig {
    /// Checks the fields; `gamma = 0` and `max_tokens = 0` are errors.
    pub fn validate(&self) -> Result<(), crate::VerifyError> {
        if self.gamma == 0 {
            return Err(crate::VerifyError::Config(
                "gamma must be at least 1".into(),
            ));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(crate::VerifyError::Config(format!(
                "top_p must be in (0, 1], got {}",
                self.top_p
            )));
        }
        if let Some(t) = &self.tree {
            t.validate()?;
        }
        if self.max_tokens == 0 {
            return Err(crate::VerifyError::Config(
                "max_tokens must be at least 1".into(),
            ));
        }
        Ok(())
    }
}
