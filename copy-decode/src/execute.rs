//! Executing edits against a [`LanguageModel`] (paper Fig. 1(c), §2.2 and
//! the serving-layer primitive of §2.4): Copy-as-Decode, where each copy
//! op's lines enter the model's context in one parallel `prefill` instead
//! of one decode step per token. The executors count forwards and tokens
//! ([`ExecStats`]); they read no clock — wall-clock timing, and races
//! against baselines (regeneration, prompt lookup: the `copy_study`
//! module of the `examples` crate), are the caller's. [`CountingModel`],
//! the counting layer between an executor and the model, is public so a
//! caller's own decoding loop is counted alike.
//!
//! ## The cost model (what a "forward" is)
//!
//! Every [`LanguageModel::prefill`] or [`LanguageModel::next_logits`] call
//! is one forward. Tokens that need no decision — the prompt, forced
//! structural literals (the FSM's forced bytes: `<program>\n<`, `/>\n<`
//! after a copy's closing `"`, the rest of `</program>`…) and a completed
//! copy op's lines — are queued and appended together with the next
//! decided token, in one forward. So, with an unbounded window,
//!
//! - Copy-as-Decode: `forwards = 1 + decisions`, where a decision is a
//!   program token not entirely inside the forced bytes at its position
//!   (op-type letters, line digits, the `"` ending a number, gen text,
//!   the `/` of `</program>`…); the `1` is the forward that appends the
//!   forced `<program>\n<` (after it the last forward yields the logits
//!   that choose EOS);
//! - regeneration of `D′` (`T` tokens), for comparison: `forwards = T`;
//!
//! plus the prompt's own forward ([`ExecStats::prompt_forwards`]).
//!
//! A model with a short window (the shipped byte-level model has 64
//! positions) gets the same calls split into chunks that fit; when the
//! context is full, the oldest tokens are dropped and the last
//! [`ExecConfig::slide_keep`] re-prefilled (one more forward, counted in
//! [`ExecStats::slide_forwards`]). Those extra forwards are reported, not
//! hidden.
//!
//! ## Driving modes
//!
//! [`CopyDecoder::execute_program`] runs a given program teacher-forced (the oracle
//! programs of the paper's upper-bound analysis: the model runs every
//! forward a real decode would, and the program's own token is taken at
//! each decision); [`CopyDecoder::decode_program`] samples a program from the model's
//! masked logits under any [`ProgramMatcher`] ([`ProgramConstraint`] or a
//! [`NestedProgramConstraint`] with a grammar for gen bodies).
//!
//! ## Context layout (our reading)
//!
//! The model's context is the prompt, then the program's tokens with each
//! copy op's lines inserted right after the token that completes the op
//! (its final `\n`), so the model sees the edited document as it is
//! written. Copied lines are tokenized span by span with the caller's
//! tokenizer — which may differ from how `D′` tokenizes as a whole at span
//! boundaries. [`CopyDecoder::execute_output`] uses the *output layout*
//! instead (the context after the prompt holds only `D′`; forwards = one
//! per copy op plus one per generated token, the queued last token riding
//! with the next copy or the final forward), where
//! [`ExecConfig::boundary`] = [`TokenBoundary::Canonical`] keeps the
//! context equal to `tok(prefix of D′)` ([`crate::boundary`]).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zapspec_core::model::{LanguageModel, ModelError};
use zapspec_core::{Constraint, Rejected, TokenId, Vocabulary};

use crate::boundary::{CanonicalTokens, TokenBoundary};
use crate::error::{ParseError, ResolveError};
use crate::fsm::{ByteState, ProgramConstraint};
use crate::gen_body::NestedProgramConstraint;
use crate::program::{
    escape_gen_text, print_op, Op, Program, GEN_OPEN, PROGRAM_CLOSE, PROGRAM_OPEN,
};
use crate::resolve::LineIndex;
use crate::tokenizer::Tokenizer;

/// Errors while executing or decoding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The model failed (bad token, context overflow, backend error).
    #[error("model: {0}")]
    Model(#[from] ModelError),
    /// The constraint refused a program token (a teacher-forced token or
    /// a token of a forced literal).
    #[error("program token refused: {0}")]
    Refused(#[from] Rejected),
    /// No token is allowed (the intersection with an inner constraint
    /// reached a dead end).
    #[error("empty mask after {tokens} program tokens")]
    EmptyMask {
        /// Program tokens consumed.
        tokens: usize,
    },
    /// The program did not end within [`ExecConfig::max_tokens`].
    #[error("no EOS within {max} tokens")]
    TokenLimit {
        /// The limit.
        max: usize,
    },
    /// The teacher-forced program ended where EOS is not allowed.
    #[error("the program's tokens end before a complete program")]
    Incomplete,
    /// The decoded program is not UTF-8 text.
    #[error("decoded program is not UTF-8")]
    NotUtf8,
    /// The decoded program does not parse (cannot happen under the FSM;
    /// reported rather than trusted).
    #[error("decoded program: {0}")]
    Parse(#[from] ParseError),
    /// The program does not resolve against the document.
    #[error("resolve: {0}")]
    Resolve(#[from] ResolveError),
    /// The window is too small to hold one token beyond what is kept.
    #[error("model window of {window} tokens cannot slide (keeping {keep})")]
    Window {
        /// The model's window.
        window: usize,
        /// Tokens kept when sliding.
        keep: usize,
    },
}

/// Settings shared by the executors.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecConfig {
    /// Most tokens decided (program tokens or output tokens) before giving
    /// up (default 1,000,000).
    pub max_tokens: usize,
    /// Tokens kept when a full window slides (default 0: half the model's
    /// window).
    pub slide_keep: usize,
    /// Most tokens per forward (default `usize::MAX`; the window bounds it
    /// anyway).
    pub max_chunk: usize,
    /// Sampling temperature for [`CopyDecoder::decode_program`] (default
    /// 0: greedy).
    pub temperature: f32,
    /// Seed of the sampler (default 0).
    pub seed: u64,
    /// How op texts are tokenized where they meet in
    /// [`CopyDecoder::execute_output`] (default
    /// [`TokenBoundary::SpanWise`]; [`TokenBoundary::Canonical`] keeps the
    /// context equal to `tok(prefix of D′)`).
    pub boundary: TokenBoundary,
    /// Tokens re-tokenized back from the end at each canonical boundary
    /// (default 8; see [`CanonicalTokens`]).
    pub canonical_window: usize,
}

impl Default for ExecConfig {
    fn default() -> Self {
        ExecConfig {
            max_tokens: 1_000_000,
            slide_keep: 0,
            max_chunk: usize::MAX,
            temperature: 0.0,
            seed: 0,
            boundary: TokenBoundary::SpanWise,
            canonical_window: 8,
        }
    }
}

/// Counts of one execution (forwards, model calls, tokens by kind).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecStats {
    /// Model forward calls, all kinds.
    pub forwards: usize,
    /// Of which re-prefills after a window slide.
    pub slide_forwards: usize,
    /// Model calls the executor asked for (one per `prefill` of a queued
    /// batch or `next_logits`), before a short window splits them into
    /// chunks and slides: the forwards with an unbounded window.
    pub calls: usize,
    /// Of which appended the prompt.
    pub prompt_calls: usize,
    /// Of which appended the prompt (its own forwards, slides included);
    /// `forwards - prompt_forwards` is the cost of the edit itself.
    pub prompt_forwards: usize,
    /// Of the slides, those while appending the prompt.
    pub prompt_slides: usize,
    /// Tokens appended to the context (prompt, decided, forced, copied,
    /// drafts — rejected drafts included; slides excluded).
    pub tokens_in: usize,
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Tokens decided one per forward (program decisions, regenerated
    /// tokens, the token before each draft).
    pub decided: usize,
    /// Program tokens inside forced literals (appended without a decision).
    pub forced: usize,
    /// Copy ops executed.
    pub copies: usize,
    /// Tokens appended by copy prefills.
    pub copied: usize,
    /// Draft tokens proposed (0 here; a caller's speculative loop on a
    /// [`CountingModel`] counts its drafts).
    pub drafted: usize,
    /// Draft tokens accepted (as [`ExecStats::drafted`]).
    pub accepted: usize,
    /// Output tokens: `D′`'s tokens (the program executors tokenize the
    /// resolved output; a caller's loop sets its own count).
    pub output_tokens: usize,
    /// Canonical boundaries ([`CopyDecoder::execute_output`]): tokens
    /// rolled back from the context (re-tokenized with the next op's
    /// text), whether already in the model's cache or still queued.
    pub rolled_back: usize,
    /// Of which were already in the model's cache (truncated, then
    /// re-prefilled in their re-tokenized form: the extra prefill cost).
    pub truncated: usize,
    /// Op boundaries where anything was rolled back.
    pub rollbacks: usize,
}

impl ExecStats {
    /// Forwards of the edit itself (the prompt's excluded).
    pub fn edit_forwards(&self) -> usize {
        self.forwards - self.prompt_forwards
    }

    /// Model calls of the edit itself ([`ExecStats::calls`] less the
    /// prompt's): its forwards with an unbounded window.
    pub fn edit_calls(&self) -> usize {
        self.calls - self.prompt_calls
    }

    /// Window slides during the edit itself.
    pub fn edit_slides(&self) -> usize {
        self.slide_forwards - self.prompt_slides
    }
}

/// The result of an execution.
#[derive(Debug, Clone)]
pub struct Execution {
    /// The output: `D′` for Copy-as-Decode (the resolved program) and
    /// teacher-forced baselines, the model's greedy text otherwise (lossy
    /// UTF-8).
    pub output: String,
    /// The program's tokens (Copy-as-Decode) or the output tokens.
    pub tokens: Vec<TokenId>,
    /// Counts.
    pub stats: ExecStats,
}

/// A program constraint that reports the literal bytes every continuation
/// starts with, so an executor can append them without a decision.
pub trait ProgramMatcher: Constraint {
    /// The forced bytes now (empty when there is a choice).
    fn forced(&self) -> Vec<u8>;
}

impl<V: Vocabulary> ProgramMatcher for ProgramConstraint<V> {
    fn forced(&self) -> Vec<u8> {
        self.forced_bytes().to_vec()
    }
}

impl<V: Vocabulary, C: Constraint> ProgramMatcher for NestedProgramConstraint<V, C> {
    fn forced(&self) -> Vec<u8> {
        self.forced_bytes()
    }
}

/// The model behind an executor: forwards with chunking and window
/// slides, counted in [`ExecStats`] (every `prefill` or `next_logits`
/// call is one forward; see the [module docs](self)). The program
/// executors run on one; a caller's own decoding loop (a baseline) can
/// too, so its counts are comparable.
pub struct CountingModel<'m, M: ?Sized> {
    model: &'m mut M,
    cfg: ExecConfig,
    stats: ExecStats,
}

impl<'m, M: LanguageModel + ?Sized> CountingModel<'m, M> {
    /// Counts the forwards of `model`, with `cfg`'s window settings
    /// ([`ExecConfig::slide_keep`], [`ExecConfig::max_chunk`]); empties
    /// the model's context.
    pub fn new(model: &'m mut M, cfg: &ExecConfig) -> Self {
        model.truncate(0);
        CountingModel {
            model,
            cfg: cfg.clone(),
            stats: ExecStats::default(),
        }
    }

    fn slide(&mut self) -> Result<(), ExecError> {
        let window = self.model.max_context();
        let keep = if self.cfg.slide_keep == 0 {
            window / 2
        } else {
            self.cfg.slide_keep
        };
        if keep >= window {
            return Err(ExecError::Window { window, keep });
        }
        let ctx = self.model.context();
        let kept = ctx[ctx.len().saturating_sub(keep)..].to_vec();
        self.model.truncate(0);
        if !kept.is_empty() {
            self.model.prefill(&kept)?;
            self.stats.forwards += 1;
            self.stats.slide_forwards += 1;
        }
        Ok(())
    }

    /// Appends `tokens` and returns the logits after each of them (`all`)
    /// or only after the last: one model call, split into forwards that
    /// fit the window (sliding it when full). Empty `tokens` append
    /// nothing and return no rows.
    pub fn forward(&mut self, tokens: &[TokenId], all: bool) -> Result<Vec<Vec<f32>>, ExecError> {
        self.stats.tokens_in += tokens.len();
        self.stats.calls += 1;
        let mut rows = Vec::new();
        let mut rest = tokens;
        while !rest.is_empty() {
            let room = self
                .model
                .max_context()
                .saturating_sub(self.model.context().len());
            if room == 0 {
                self.slide()?;
                continue;
            }
            let take = room.min(self.cfg.max_chunk.max(1)).min(rest.len());
            let out = self.model.prefill(&rest[..take])?;
            self.stats.forwards += 1;
            let n = out.nrows();
            for i in 0..n {
                if all || (i + 1 == n && take == rest.len()) {
                    rows.push(out.row(i).to_vec());
                }
            }
            rest = &rest[take..];
        }
        Ok(rows)
    }

    /// Appends the prompt in its own forward(s), counted apart
    /// ([`ExecStats::prompt_forwards`] …); the logits after it (`None`
    /// for an empty prompt). Call it first.
    pub fn prompt(&mut self, prompt: &[TokenId]) -> Result<Option<Vec<f32>>, ExecError> {
        self.stats.prompt_tokens = prompt.len();
        if prompt.is_empty() {
            return Ok(None);
        }
        let l = self.forward(prompt, false)?.pop();
        self.stats.prompt_forwards = self.stats.forwards;
        self.stats.prompt_calls = self.stats.calls;
        self.stats.prompt_slides = self.stats.slide_forwards;
        Ok(l)
    }

    /// Logits after appending `pending`; when `pending` is empty, `last`
    /// (the logits of the previous forward, taken) or one `next_logits`
    /// call.
    pub fn logits_or(
        &mut self,
        pending: &[TokenId],
        last: &mut Option<Vec<f32>>,
    ) -> Result<Vec<f32>, ExecError> {
        match last.take() {
            Some(l) if pending.is_empty() => Ok(l),
            _ => self.logits(pending),
        }
    }

    /// Logits after appending `pending` (or of the current context, one
    /// `next_logits` call, when `pending` is empty).
    pub fn logits(&mut self, pending: &[TokenId]) -> Result<Vec<f32>, ExecError> {
        if pending.is_empty() {
            let l = self.model.next_logits()?;
            self.stats.forwards += 1;
            self.stats.calls += 1;
            return Ok(l);
        }
        Ok(self.forward(pending, false)?.pop().unwrap_or_default())
    }

    /// Drops the last `n` tokens of the model's context (e.g. rejected
    /// draft tokens); not a forward.
    pub fn truncate_back(&mut self, n: usize) {
        let len = self.model.context().len();
        self.model.truncate(len.saturating_sub(n));
    }

    /// The model's context.
    pub fn context(&self) -> &[TokenId] {
        self.model.context()
    }

    /// The counts so far.
    pub fn stats(&self) -> &ExecStats {
        &self.stats
    }

    /// The counts, for a caller's loop to add its own (decided tokens,
    /// drafts, output tokens).
    pub fn stats_mut(&mut self) -> &mut ExecStats {
        &mut self.stats
    }

    /// Ends the counting; its counts.
    pub fn into_stats(self) -> ExecStats {
        self.stats
    }
}

/// Samples from `softmax(logits / temperature)` restricted to `allowed`.
fn sample(
    logits: &[f32],
    allowed: &[TokenId],
    temperature: f32,
    rng: &mut ChaCha8Rng,
) -> Option<TokenId> {
    if temperature <= 0.0 {
        let best = allowed.iter().copied().max_by(|&a, &b| {
            let la = logits.get(a as usize).copied().unwrap_or(f32::NEG_INFINITY);
            let lb = logits.get(b as usize).copied().unwrap_or(f32::NEG_INFINITY);
            la.total_cmp(&lb).then(b.cmp(&a))
        });
        return best;
    }
    let l = |t: TokenId| logits.get(t as usize).copied().unwrap_or(f32::NEG_INFINITY);
    let max = allowed
        .iter()
        .map(|&t| l(t))
        .fold(f32::NEG_INFINITY, f32::max);
    let w: Vec<f64> = allowed
        .iter()
        .map(|&t| (((l(t) - max) / temperature) as f64).exp())
        .collect();
    let total: f64 = w.iter().sum();
    if total.is_nan() || total <= 0.0 {
        return allowed.first().copied();
    }
    let mut u = rng.random::<f64>() * total;
    for (&t, &wi) in allowed.iter().zip(&w) {
        if u < wi {
            return Some(t);
        }
        u -= wi;
    }
    allowed.last().copied()
}

/// Tracks the program's bytes and reports each copy op when its final
/// `\n` is read.
struct OpScanner {
    state: ByteState,
    n: u64,
    range: (u64, u64),
}

impl OpScanner {
    fn new(n: usize) -> Self {
        OpScanner {
            state: ByteState::START,
            n: n as u64,
            range: (0, 0),
        }
    }

    fn push(&mut self, bytes: &[u8], copies: &mut Vec<(usize, usize)>) {
        for &b in bytes {
            let Some(next) = self.state.step(b, self.n) else {
                // Not a program prefix: the constraint refused it first.
                return;
            };
            if let (ByteState::Second { lo, val }, ByteState::CopyClose(1)) = (self.state, next) {
                self.range = (lo, val);
            }
            if matches!(
                (self.state, next),
                (ByteState::CopyClose(3), ByteState::AwaitOp)
            ) {
                copies.push((self.range.0 as usize, self.range.1 as usize));
            }
            self.state = next;
        }
    }
}

/// How program tokens are chosen.
enum Drive<'a> {
    Teacher(&'a [TokenId]),
    Sample(Box<ChaCha8Rng>),
}

/// The shared loop of [`CopyDecoder::execute_program`] and
/// [`CopyDecoder::decode_program`].
#[allow(clippy::too_many_arguments)]
fn run<M, C, V, T>(
    model: &mut M,
    mut c: C,
    vocab: &V,
    tok: &T,
    prompt: &[TokenId],
    doc: &str,
    mut drive: Drive<'_>,
    cfg: &ExecConfig,
) -> Result<Execution, ExecError>
where
    M: LanguageModel + ?Sized,
    C: ProgramMatcher,
    V: Vocabulary + ?Sized,
    T: Tokenizer + ?Sized,
{
    let lines = LineIndex::new(doc);
    let mut scan = OpScanner::new(lines.len());
    let mut counted = CountingModel::new(model, cfg);
    let mut last = counted.prompt(prompt)?;
    let mut pending: Vec<TokenId> = Vec::new();
    let mut program: Vec<TokenId> = Vec::new();
    let mut copies: Vec<(usize, usize)> = Vec::new();
    let mut k = 0usize;
    loop {
        // Tokens inside the forced literal: appended without a decision.
        loop {
            let f = c.forced();
            if f.is_empty() {
                break;
            }
            let toks: Vec<TokenId> = match &drive {
                Drive::Teacher(ts) => {
                    let mut run = Vec::new();
                    let mut used = 0usize;
                    while let Some(&t) = ts.get(k + run.len()) {
                        let b = vocab.token_bytes(t);
                        if b.is_empty() || used + b.len() > f.len() || f[used..used + b.len()] != *b
                        {
                            break;
                        }
                        used += b.len();
                        run.push(t);
                    }
                    k += run.len();
                    run
                }
                Drive::Sample(_) => {
                    let text = std::str::from_utf8(&f).map_err(|_| ExecError::NotUtf8)?;
                    tok.tokenize(text)
                }
            };
            if toks.is_empty() {
                break;
            }
            for t in toks {
                c.advance(t)?;
                program.push(t);
                pending.push(t);
                counted.stats.forced += 1;
                scan.push(vocab.token_bytes(t), &mut copies);
            }
            flush_copies(&mut copies, &lines, tok, &mut pending, &mut counted.stats);
        }
        if program.len() >= cfg.max_tokens {
            return Err(ExecError::TokenLimit {
                max: cfg.max_tokens,
            });
        }
        // A decision: logits for the next position.
        let logits = counted.logits_or(&pending, &mut last)?;
        pending.clear();
        let t = match &mut drive {
            Drive::Teacher(ts) => match ts.get(k) {
                Some(&t) => {
                    k += 1;
                    t
                }
                None if c.is_accepting() => c.eos(),
                None => return Err(ExecError::Incomplete),
            },
            Drive::Sample(rng) => {
                let mask = c.mask();
                let allowed: Vec<TokenId> = mask.iter().collect();
                sample(&logits, &allowed, cfg.temperature, rng).ok_or(ExecError::EmptyMask {
                    tokens: program.len(),
                })?
            }
        };
        c.advance(t)?;
        if c.is_finished() {
            break;
        }
        program.push(t);
        pending.push(t);
        counted.stats.decided += 1;
        scan.push(vocab.token_bytes(t), &mut copies);
        flush_copies(&mut copies, &lines, tok, &mut pending, &mut counted.stats);
    }
    let bytes: Vec<u8> = program
        .iter()
        .flat_map(|&t| vocab.token_bytes(t).iter().copied())
        .collect();
    let text = String::from_utf8(bytes).map_err(|_| ExecError::NotUtf8)?;
    let parsed = Program::parse(&text)?;
    let output = lines.resolve(&parsed)?;
    let mut stats = counted.stats;
    // D′'s tokens, to compare throughput with the baselines.
    stats.output_tokens = tok.tokenize(&output).len();
    Ok(Execution {
        output,
        tokens: program,
        stats,
    })
}

fn flush_copies<T: Tokenizer + ?Sized>(
    copies: &mut Vec<(usize, usize)>,
    lines: &LineIndex<'_>,
    tok: &T,
    pending: &mut Vec<TokenId>,
    stats: &mut ExecStats,
) {
    for (i, j) in copies.drain(..) {
        // In range: the FSM bounds I and J by the document's line count.
        if let Some(text) = lines.span(i, j) {
            let ids = tok.tokenize(text);
            stats.copies += 1;
            stats.copied += ids.len();
            pending.extend(ids);
        }
    }
}

/// Copy-as-Decode over one vocabulary and tokenizer: the executor of
/// programs ([`execute_program`](Self::execute_program), teacher-forced)
/// and the decoder of programs ([`decode_program`](Self::decode_program),
/// sampled). `tok` tokenizes copied lines, forced literals and a given
/// program's text.
#[derive(Debug, Clone)]
pub struct CopyDecoder<'a, V: ?Sized, T: ?Sized> {
    /// The model's vocabulary (token bytes).
    pub vocab: &'a V,
    /// The tokenizer of the same vocabulary.
    pub tok: &'a T,
    /// Settings.
    pub cfg: ExecConfig,
}

impl<'a, V: Vocabulary + ?Sized, T: Tokenizer + ?Sized> CopyDecoder<'a, V, T> {
    /// An executor over `vocab` and `tok` with settings `cfg`.
    pub fn new(vocab: &'a V, tok: &'a T, cfg: ExecConfig) -> Self {
        CopyDecoder { vocab, tok, cfg }
    }

    /// Copy-as-Decode with a given program, teacher-forced: the program's
    /// tokens ([`tokenize_program`]: op by op, gen bodies on their own)
    /// are checked by `c`
    /// (at its start, for a document of `doc`'s line count), the model
    /// runs every forward a decoder would — one per decision, forced
    /// literals and copied lines appended with the next decision — and the
    /// output is `R(P, D)`. See the [module docs](self) for the cost model.
    pub fn execute_program<M: LanguageModel + ?Sized, C: ProgramMatcher>(
        &self,
        model: &mut M,
        c: C,
        prompt: &[TokenId],
        doc: &str,
        program: &Program,
    ) -> Result<Execution, ExecError> {
        let ids = tokenize_program(program, self.tok);
        run(
            model,
            c,
            self.vocab,
            self.tok,
            prompt,
            doc,
            Drive::Teacher(&ids),
            &self.cfg,
        )
    }

    /// Copy-as-Decode, sampled: the model writes a program under `c`
    /// (greedy at temperature 0, else seeded sampling), forced literals are
    /// tokenized and appended without a decision, copies are prefilled;
    /// the output is the resolved program. Errors on a dead end
    /// ([`ExecError::EmptyMask`]) or past [`ExecConfig::max_tokens`].
    pub fn decode_program<M: LanguageModel + ?Sized, C: ProgramMatcher>(
        &self,
        model: &mut M,
        c: C,
        prompt: &[TokenId],
        doc: &str,
    ) -> Result<Execution, ExecError> {
        let rng = ChaCha8Rng::seed_from_u64(self.cfg.seed);
        run(
            model,
            c,
            self.vocab,
            self.tok,
            prompt,
            doc,
            Drive::Sample(Box::new(rng)),
            &self.cfg,
        )
    }
    /// Copy-as-Decode in the *output layout* (paper §2.4's serving-layer
    /// primitive, the layout the closed-form bound assumes): the program is
    /// executed by the serving layer and the model's context after the
    /// prompt holds only `D′` as it is written — each copy op's lines
    /// appended in one `prefill` forward (with the queued last gen token),
    /// each gen op's tokens decided one per forward (teacher-forced), and
    /// a last forward after the final token (the logits that choose EOS).
    /// The program's own tags and digits are not in the context, so this
    /// runs a given program only (oracle programs: the bound's
    /// idealisation, op selection free).
    ///
    /// With [`TokenBoundary::SpanWise`] each op's text is tokenized on its
    /// own; with [`TokenBoundary::Canonical`] the trailing tokens that can
    /// merge with the next op's text are rolled back (the model's cache
    /// truncated when they were already in it) and re-tokenized with it
    /// ([`CanonicalTokens`]), so the final context after the prompt is
    /// exactly `tok(D′)` and equals the baselines' teacher-forced context.
    /// [`ExecStats::rolled_back`], [`ExecStats::truncated`] and
    /// [`ExecStats::rollbacks`] count the extra work. Errors when the
    /// program does not resolve against `doc` (checked first).
    pub fn execute_output<M: LanguageModel + ?Sized>(
        &self,
        model: &mut M,
        prompt: &[TokenId],
        doc: &str,
        program: &Program,
    ) -> Result<Execution, ExecError> {
        let lines = LineIndex::new(doc);
        let output = lines.resolve(program)?;
        let mut counted = CountingModel::new(model, &self.cfg);
        let mut last = counted.prompt(prompt)?;
        let mut canon = CanonicalTokens::new(self.cfg.canonical_window);
        // Output tokens in the model's cache, then queued ones.
        let mut committed = 0usize;
        let mut pending: Vec<TokenId> = Vec::new();
        let mut all: Vec<TokenId> = Vec::new();
        for op in &program.ops {
            let (text, copy) = match op {
                // In range: the program resolved above.
                Op::Copy { start, end } => (lines.span(*start, *end).unwrap_or(""), true),
                Op::Gen { text } => (text.as_str(), false),
            };
            if text.is_empty() {
                continue;
            }
            let new = match self.cfg.boundary {
                TokenBoundary::SpanWise => self.tok.tokenize(text),
                TokenBoundary::Canonical => {
                    let a = canon.append(text, self.tok, self.vocab);
                    if a.rolled_back > 0 {
                        counted.stats.rollbacks += 1;
                        counted.stats.rolled_back += a.rolled_back;
                    }
                    if a.keep >= committed {
                        pending.truncate(a.keep - committed);
                    } else {
                        let drop = committed - a.keep;
                        counted.stats.truncated += drop;
                        counted.truncate_back(drop);
                        committed = a.keep;
                        pending.clear();
                        last = None;
                    }
                    all.truncate(a.keep);
                    a.new
                }
            };
            all.extend_from_slice(&new);
            if copy {
                counted.stats.copies += 1;
                counted.stats.copied += new.len();
                pending.extend_from_slice(&new);
                last = counted.forward(&pending, false)?.pop();
                committed += pending.len();
                pending.clear();
            } else {
                for t in new {
                    counted.logits_or(&pending, &mut last)?;
                    committed += pending.len();
                    pending.clear();
                    pending.push(t);
                    counted.stats.decided += 1;
                }
            }
        }
        if !pending.is_empty() {
            counted.forward(&pending, false)?;
        }
        let mut stats = counted.stats;
        stats.output_tokens = all.len();
        Ok(Execution {
            output,
            tokens: all,
            stats,
        })
    }
}

/// The tokens of `program`'s printed text, tokenized piece by piece: the
/// header, each copy op with its `\n`, each gen op as `<gen>`, its
/// (escaped) text and `</gen>\n` separately, and `</program>`. Gen bodies
/// are thus token-aligned, as a [`NestedProgramConstraint`] requires (a
/// whole-text BPE tokenization may merge `>` with a body's first bytes);
/// the bytes equal [`Program::print`]'s. For a byte-level vocabulary this
/// is the whole-text tokenization.
pub fn tokenize_program<T: Tokenizer + ?Sized>(program: &Program, tok: &T) -> Vec<TokenId> {
    let mut ids = tok.tokenize(PROGRAM_OPEN);
    let mut piece = String::new();
    for op in &program.ops {
        piece.clear();
        match op {
            Op::Copy { .. } => {
                print_op(op, &mut piece);
                piece.push('\n');
                ids.extend(tok.tokenize(&piece));
            }
            Op::Gen { text } => {
                ids.extend(tok.tokenize(GEN_OPEN));
                escape_gen_text(text, &mut piece);
                if !piece.is_empty() {
                    ids.extend(tok.tokenize(&piece));
                }
                ids.extend(tok.tokenize("</gen>\n"));
            }
        }
    }
    ids.extend(tok.tokenize(PROGRAM_CLOSE));
    ids
}
