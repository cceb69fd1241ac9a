//! The builder: one speculate–verify–rollback loop
//! ([`zapspec_verify::SpeculativeDecoder`]) assembled from a target
//! [`LanguageModel`], a [`Constraint`], a [`Drafter`] and a
//! [`PhiEstimator`], each a type parameter swapped through its trait.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zapspec_core::{Constraint, LanguageModel, TokenId};
use zapspec_phi::{NoModel, PhiEstimator, Uniform};
use zapspec_verify::{
    Drafter, Mode, NoDraft, RoundReport, RoundStats, SpecConfig, SpeculativeDecoder, StopReason,
    TreeConfig, TreeVerify, VerifierKind,
};
use zapspec_vocab::Message;

use crate::text::TextOut;
use crate::{Error, Prompt, Tempered, Tokenizer};

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
    tokenizer: Option<Tokenizer>,
    stop: Vec<String>,
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
                tokenizer: None,
                stop: Vec::new(),
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

    /// Grammar-forced tokens (on by default; "jump-forward" inside
    /// speculation, `zapspec_verify::forced`): where the constraint allows
    /// exactly one token (not EOS) — a fixed JSON key, a closing bracket —
    /// it is committed without sampling and scored in the same target
    /// forward as the round's draft, so forced stretches cost no target
    /// call of their own. The output is unchanged (token for token when
    /// greedy, in law when sampled): a token the mask leaves alone has
    /// probability 1 under every verifier's law. Counted in
    /// [`RoundStats::forced`] and [`RoundReport::forced`]. `false` drafts
    /// and verifies every token ([`zapspec_verify::ForcedTokens::off`]).
    pub fn forced_tokens(mut self, on: bool) -> Self {
        self.settings.spec.forced_tokens = if on {
            zapspec_verify::ForcedTokens::default()
        } else {
            zapspec_verify::ForcedTokens::off()
        };
        self
    }

    /// Linear drafts verified by the verifier's rejection rule (the
    /// default; undoes [`Builder::tree`]).
    pub fn linear(mut self) -> Self {
        self.settings.spec.tree = None;
        self
    }

    /// At most `n` tokens per generation (EOS excluded; default 4096);
    /// reaching it stops the generation with [`StopReason::MaxTokens`] and
    /// keeps its tokens.
    pub fn max_tokens(mut self, n: usize) -> Self {
        self.settings.spec.max_tokens = n;
        self
    }

    /// The tokenizer that encodes text and chat prompts and decodes the
    /// output's text ([`crate::Model::builder`] sets the model's).
    pub fn tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.settings.tokenizer = Some(tokenizer);
        self
    }

    /// Stop strings: a generation whose text reaches one of them ends there
    /// ([`StopReason::StopString`]); the text is cut before the string and
    /// the tokens after the token that completed it. Needs a tokenizer.
    pub fn stop<S: Into<String>>(mut self, stops: impl IntoIterator<Item = S>) -> Self {
        self.settings.stop = stops.into_iter().map(Into::into).collect();
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
            tokenizer,
            stop,
        } = self.settings;
        if !stop.is_empty() && tokenizer.is_none() {
            return Err(Error::Config(
                "stop strings need a tokenizer (Builder::tokenizer)".into(),
            ));
        }
        if stop.iter().any(String::is_empty) {
            return Err(Error::Config("a stop string is empty".into()));
        }
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
        if let Some(t) = &tokenizer {
            let n = zapspec_core::Vocabulary::len(&**t.vocab());
            if n != self.constraint.vocab_size() {
                return Err(Error::Config(format!(
                    "the tokenizer has {n} tokens, the constraint ranges over {}",
                    self.constraint.vocab_size()
                )));
            }
        }
        let target = Tempered::new(self.model, temperature);
        let decoder = SpeculativeDecoder::new(target, self.drafter, self.phi, spec)?;
        Ok(Pipeline {
            decoder,
            constraint: self.constraint,
            rng: ChaCha8Rng::seed_from_u64(seed),
            tokenizer,
            stop,
        })
    }
}

/// One generated sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    /// The output tokens (EOS excluded; cut after a stop string).
    pub tokens: Vec<TokenId>,
    /// Their text (empty when the pipeline has no tokenizer; cut before a
    /// stop string).
    pub text: String,
    /// Why the sequence ended: reaching the length limit is a stop reason,
    /// never an error, so the output is never lost.
    pub stop: StopReason,
    /// The loop's counters for this sequence (rounds, drafted and accepted
    /// tokens, grammar-forced tokens, target and draft calls).
    pub stats: RoundStats,
    /// Each round in order: the grammar-forced tokens, the drafted block
    /// (in tree mode, the accepted path), how many of its tokens were
    /// accepted, the correction or bonus token.
    pub rounds: Vec<RoundReport>,
}

/// An assembled loop, built once: each [`Pipeline::generate`] decodes one
/// sequence after its own prompt, continuing the pipeline's random stream.
pub struct Pipeline<M, C, D, F> {
    decoder: SpeculativeDecoder<Tempered<M>, D, F>,
    constraint: C,
    rng: ChaCha8Rng,
    tokenizer: Option<Tokenizer>,
    stop: Vec<String>,
}

impl<M, C, D, F> Pipeline<M, C, D, F>
where
    M: LanguageModel,
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    /// Decodes one sequence after `prompt` (token ids, text, or chat
    /// messages: anything [`Prompt`] converts from) from the constraint's
    /// initial state. The models' cache of what this prompt shares with the
    /// previous one is kept.
    pub fn generate(&mut self, prompt: impl Into<Prompt>) -> Result<Generation, Error> {
        let mut rng = std::mem::replace(&mut self.rng, ChaCha8Rng::seed_from_u64(0));
        let out = self.run(&prompt.into(), &mut rng, None);
        self.rng = rng;
        out
    }

    /// [`Pipeline::generate`] of a conversation, through the tokenizer's
    /// chat template (the assistant's generation prompt appended).
    pub fn generate_chat(&mut self, messages: &[Message]) -> Result<Generation, Error> {
        self.generate(messages)
    }

    /// [`Pipeline::generate`], calling `on_text` with each piece of text as
    /// it is decided (after every round): whole characters only, never the
    /// start of a stop string that may still complete; the pieces
    /// concatenate to [`Generation::text`]. Needs a tokenizer.
    pub fn generate_stream(
        &mut self,
        prompt: impl Into<Prompt>,
        mut on_text: impl FnMut(&str),
    ) -> Result<Generation, Error> {
        if self.tokenizer.is_none() {
            return Err(Error::Config(
                "streaming text needs a tokenizer (Builder::tokenizer)".into(),
            ));
        }
        let mut rng = std::mem::replace(&mut self.rng, ChaCha8Rng::seed_from_u64(0));
        let out = self.run(&prompt.into(), &mut rng, Some(&mut on_text));
        self.rng = rng;
        out
    }

    /// [`Pipeline::generate`] with a caller's random stream.
    pub fn generate_with<R: Rng + ?Sized>(
        &mut self,
        prompt: impl Into<Prompt>,
        rng: &mut R,
    ) -> Result<Generation, Error> {
        self.run(&prompt.into(), rng, None)
    }

    fn run<R: Rng + ?Sized>(
        &mut self,
        prompt: &Prompt,
        rng: &mut R,
        mut on_text: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Generation, Error> {
        let ids = prompt.to_tokens(self.tokenizer.as_ref())?;
        self.decoder.set_prompt(&ids);
        let before = self.decoder.stats();
        let mut state = self.decoder.start(&self.constraint)?;
        let mut text = self.tokenizer.as_ref().map(|t| TextOut::new(t, &self.stop));
        let (eos, max) = (self.constraint.eos(), self.decoder.config().max_tokens);
        let mut hit = None;
        let mut rounds = Vec::new();
        while !self.decoder.is_done(&state) {
            rounds.push(self.decoder.round(&mut state, rng)?);
            let Some(text) = text.as_mut() else { continue };
            let c = &state.committed;
            let out = c.len().min(max) - usize::from(c.len() <= max && c.last() == Some(&eos));
            if out > text.len() {
                hit = text.push(&c[text.len()..out]);
            }
            if hit.is_some() {
                break;
            }
            if let Some(f) = on_text.as_mut() {
                let d = text.delta();
                if !d.is_empty() {
                    f(d);
                }
            }
        }
        let (mut tokens, mut stop) = match hit {
            Some(_) => (state.committed, StopReason::MaxTokens),
            None => self.decoder.finish(&self.constraint, state),
        };
        // the output's last bytes may end in an unfinished character, whose
        // U+FFFD may complete a stop string
        let hit = hit.or_else(|| text.as_mut().and_then(TextOut::flush));
        let text_len = hit.map(|h| {
            tokens.truncate(h.tokens);
            stop = StopReason::StopString(h.stop);
            h.text_len
        });
        let text = match text {
            Some(out) => {
                let (all, rest) = out.finish(text_len);
                if let Some(f) = on_text.as_mut() {
                    if !rest.is_empty() {
                        f(&rest);
                    }
                }
                all
            }
            None => String::new(),
        };
        Ok(Generation {
            tokens,
            text,
            stop,
            stats: self.decoder.stats().since(&before),
            rounds,
        })
    }

    /// Counters over every sequence so far (rounds, drafted, accepted,
    /// target and draft calls).
    pub fn stats(&self) -> RoundStats {
        self.decoder.stats()
    }

    /// The tokenizer, when the pipeline has one.
    pub fn tokenizer(&self) -> Option<&Tokenizer> {
        self.tokenizer.as_ref()
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
