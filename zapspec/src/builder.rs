//! The builder: one speculate–verify–rollback loop
//! ([`zapspec_verify::SpeculativeDecoder`]) assembled from a target
//! [`LanguageModel`], a [`Constraint`], a [`Drafter`] and a
//! [`PhiEstimator`], each a type parameter swapped through its trait.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use zapspec_core::{Constraint, LanguageModel, TokenId};
use zapspec_phi::{NoModel, PhiEstimator, Uniform};
use zapspec_verify::{
    Drafter, Generation, Mode, NoDraft, RoundStats, SpecConfig, SpeculativeDecoder, TreeConfig,
    TreeVerify, VerifierKind,
};

use crate::{Error, Tempered};

/// Configures a [`Pipeline`]: start from [`Builder::new`] (plain
/// constrained sampling at temperature 1: no drafter, Leviathan, γ = 4,
/// seed 0) and replace one part per call.
#[derive(Debug, Clone)]
pub struct Builder<M, C, D, F> {
    model: M,
    constraint: C,
    drafter: D,
    phi: F,
    settings: Settings,
}

/// The builder's settings (everything but the four parts).
#[derive(Debug, Clone)]
struct Settings {
    spec: SpecConfig,
    temperature: f64,
    seed: u64,
    prompt: Vec<TokenId>,
}

impl<M, C> Builder<M, C, NoDraft, Uniform> {
    /// The target `model` under `constraint` (use
    /// [`crate::Unconstrained`] for none).
    pub fn new(model: M, constraint: C) -> Self {
        Builder {
            model,
            constraint,
            drafter: NoDraft,
            phi: Uniform,
            settings: Settings {
                spec: SpecConfig::default(),
                temperature: 1.0,
                seed: 0,
                prompt: Vec::new(),
            },
        }
    }
}

impl<M, C, D, F> Builder<M, C, D, F> {
    /// Replaces the target model.
    pub fn model<M2>(self, model: M2) -> Builder<M2, C, D, F> {
        Builder {
            model,
            constraint: self.constraint,
            drafter: self.drafter,
            phi: self.phi,
            settings: self.settings,
        }
    }

    /// Replaces the constraint.
    pub fn constraint<C2>(self, constraint: C2) -> Builder<M, C2, D, F> {
        Builder {
            model: self.model,
            constraint,
            drafter: self.drafter,
            phi: self.phi,
            settings: self.settings,
        }
    }

    /// Replaces the drafter: [`NoDraft`], [`zapspec_verify::PromptLookup`],
    /// any [`LanguageModel`] (a draft model, e.g. the target cut after its
    /// first layers for self-speculation), or any other [`Drafter`].
    pub fn drafter<D2>(self, drafter: D2) -> Builder<M, C, D2, F> {
        Builder {
            model: self.model,
            constraint: self.constraint,
            drafter,
            phi: self.phi,
            settings: self.settings,
        }
    }

    /// FVO-Spec with the estimator `phi` (future-validity §4, Prop. 6):
    /// the verifier's target is `p_t·Φ̂_t` on the valid set. With exact Φ
    /// the loop samples `μ*`.
    pub fn fvo_spec<F2>(mut self, phi: F2) -> Builder<M, C, D, F2> {
        self.settings.spec.verifier = VerifierKind::FvoSpec;
        Builder {
            model: self.model,
            constraint: self.constraint,
            drafter: self.drafter,
            phi,
            settings: self.settings,
        }
    }

    /// Leviathan rejection on the masked target (the default): the loop
    /// samples `μ^proj`, as plain constrained sampling does; the Φ
    /// estimator is not consulted.
    pub fn leviathan(mut self) -> Self {
        self.settings.spec.verifier = VerifierKind::Leviathan;
        self
    }

    /// Any [`VerifierKind`] (the equality diagnostic included).
    pub fn verifier(mut self, kind: VerifierKind) -> Self {
        self.settings.spec.verifier = kind;
        self
    }

    /// Greedy decoding: drafts are the drafter's mode, a draft is accepted
    /// iff it is the argmax of the verifier's target.
    pub fn greedy(mut self) -> Self {
        self.settings.spec.mode = Mode::Greedy;
        self
    }

    /// Sampled decoding (the default).
    pub fn sampled(mut self) -> Self {
        self.settings.spec.mode = Mode::Sampled;
        self
    }

    /// Softmax temperature of the target (finite, > 0; default 1), applied
    /// by wrapping it in [`Tempered`]. A draft model is not tempered by
    /// this call (wrap it yourself to draft from the tempered law; the
    /// output law does not depend on it).
    pub fn temperature(mut self, t: f64) -> Self {
        self.settings.temperature = t;
        self
    }

    /// Nucleus truncation of the verifier's target law
    /// ([`SpecConfig::top_p`]); 1 (the default) keeps it whole.
    pub fn top_p(mut self, p: f64) -> Self {
        self.settings.spec.top_p = p;
        self
    }

    /// Seed of the pipeline's random stream (ChaCha8).
    pub fn seed(mut self, seed: u64) -> Self {
        self.settings.seed = seed;
        self
    }

    /// Draft block length γ (default 4).
    pub fn gamma(mut self, gamma: usize) -> Self {
        self.settings.spec.gamma = gamma;
        self
    }

    /// Tree mode (`zapspec_verify::tree`): every round drafts a tree of
    /// depth ≤ γ bounded by `shape` ([`Drafter::draft_tree`]: a branching
    /// [`zapspec_verify::TreeLookup`], or any drafter's linear draft as a
    /// chain), cuts the nodes the constraint refuses with the masks of all
    /// nodes in one walk, scores the rest in one target call
    /// ([`LanguageModel::tree_logits`]) and walks down it emitting each
    /// token from the verifier's law (a draw, or SpecInfer's residual
    /// rule over a draft model's sampled children: [`Builder::tree_verify`])
    /// — the same output law (and greedy output) as plain constrained
    /// decoding. A draft model drafts a sampled tree of i.i.d. draws when
    /// sampling, its argmax chain when greedy.
    pub fn tree(mut self, shape: TreeConfig) -> Self {
        self.settings.spec.tree = Some(shape);
        self
    }

    /// Tree mode, sampled: how nodes whose children were sampled from a
    /// draft law are verified ([`SpecConfig::tree_verify`]):
    /// [`TreeVerify::Residual`] (SpecInfer's multi-step speculative
    /// sampling, the default) or [`TreeVerify::Naive`]. Both keep the
    /// output law.
    pub fn tree_verify(mut self, how: TreeVerify) -> Self {
        self.settings.spec.tree_verify = how;
        self
    }

    /// Linear drafts verified by the verifier's rejection rule (the
    /// default; undoes [`Builder::tree`]).
    pub fn linear(mut self) -> Self {
        self.settings.spec.tree = None;
        self
    }

    /// A generation longer than this (EOS included) is an error
    /// ([`zapspec_verify::VerifyError::TooLong`]).
    pub fn max_tokens(mut self, n: usize) -> Self {
        self.settings.spec.max_tokens = n;
        self
    }

    /// Tokens the models condition on before the output (a chat prompt);
    /// outside the constraint.
    pub fn prompt(mut self, prompt: &[TokenId]) -> Self {
        self.settings.prompt = prompt.to_vec();
        self
    }

    /// The loop's configuration as it stands.
    pub fn spec(&self) -> &SpecConfig {
        &self.settings.spec
    }

    /// Checks the configuration and assembles the loop.
    pub fn build(self) -> Result<Pipeline<M, C, D, F>, Error>
    where
        M: LanguageModel,
        C: Constraint,
        D: Drafter,
        F: PhiEstimator<C, NoModel>,
    {
        let Settings {
            spec,
            temperature,
            seed,
            prompt,
        } = self.settings;
        if !(temperature.is_finite() && temperature > 0.0) {
            return Err(Error::Config(format!(
                "temperature must be finite and > 0, got {temperature}"
            )));
        }
        if self.model.vocab_size() != self.constraint.vocab_size() {
            return Err(Error::VocabMismatch {
                model: self.model.vocab_size(),
                constraint: self.constraint.vocab_size(),
            });
        }
        let target = Tempered::new(self.model, temperature);
        let decoder =
            SpeculativeDecoder::new(target, self.drafter, self.phi, spec)?.with_prompt(&prompt);
        Ok(Pipeline {
            decoder,
            constraint: self.constraint,
            rng: ChaCha8Rng::seed_from_u64(seed),
        })
    }
}

/// An assembled loop: [`Pipeline::generate`] decodes one sequence.
pub struct Pipeline<M, C, D, F> {
    decoder: SpeculativeDecoder<Tempered<M>, D, F>,
    constraint: C,
    rng: ChaCha8Rng,
}

impl<M, C, D, F> Pipeline<M, C, D, F>
where
    M: LanguageModel,
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    /// Decodes one sequence (EOS not included) from the constraint's
    /// initial state, continuing the pipeline's random stream; with its
    /// counters for this sequence.
    pub fn generate(&mut self) -> Result<Generation, Error> {
        Ok(self.decoder.generate(&self.constraint, &mut self.rng)?)
    }

    /// [`Pipeline::generate`] with a caller's random stream.
    pub fn generate_with<R: rand::Rng + ?Sized>(
        &mut self,
        rng: &mut R,
    ) -> Result<Generation, Error> {
        Ok(self.decoder.generate(&self.constraint, rng)?)
    }

    /// Counters over every sequence so far (rounds, drafted, accepted,
    /// target and draft calls).
    pub fn stats(&self) -> RoundStats {
        self.decoder.stats()
    }

    /// The loop itself (its target, drafter and estimator are public
    /// fields).
    pub fn decoder(&self) -> &SpeculativeDecoder<Tempered<M>, D, F> {
        &self.decoder
    }

    /// The loop, mutably (e.g. to run [`SpeculativeDecoder::round`] by
    /// hand).
    pub fn decoder_mut(&mut self) -> &mut SpeculativeDecoder<Tempered<M>, D, F> {
        &mut self.decoder
    }

    /// The constraint's initial state.
    pub fn constraint(&self) -> &C {
        &self.constraint
    }
}
