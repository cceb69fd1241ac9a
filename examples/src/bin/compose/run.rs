//! One decoding run of the `zapspec` facade as a table row: the
//! builder, the estimator timer, the capped-output comparison and the
//! llguidance-masked row.

use std::time::Instant;

use anyhow::Result;
use zapspec::{Builder, Constraint, Drafter, OneStepCheap, PhiEstimator, TreeConfig, TreeVerify};
use zapspec_backend::CausalLm;
use zapspec_core::{LanguageModel, TokenId};
use zapspec_phi::NoModel;

use examples::llg::{compact_schema, LlgConstraint};
use examples::smollm2::SmolLm2;
use llguidance::api::TopLevelGrammar;
use llguidance::ParserFactory;

use crate::Args;

/// The work of a Φ estimator over one run, measured by [`Timed`]: wall
/// time inside its calls, calls, candidates `Σ|A_t|`, and the work it
/// reports ([`zapspec_phi::PhiCost`]).
#[derive(serde::Serialize, Clone, Copy, Debug, Default)]
pub(crate) struct PhiClock {
    pub(crate) seconds: f64,
    pub(crate) calls: u64,
    pub(crate) candidates: u64,
    pub(crate) forwards: u64,
    pub(crate) rollouts: u64,
    pub(crate) constraint_ops: u64,
}

/// Times every call of the estimator inside (the loop's Φ cost) into a
/// shared [`PhiClock`]; values are the inner estimator's.
pub(crate) struct Timed<E> {
    inner: E,
    clock: std::rc::Rc<std::cell::Cell<PhiClock>>,
}

impl<E> Timed<E> {
    pub(crate) fn new(inner: E) -> (Self, std::rc::Rc<std::cell::Cell<PhiClock>>) {
        let clock = std::rc::Rc::new(std::cell::Cell::new(PhiClock::default()));
        (
            Timed {
                inner,
                clock: clock.clone(),
            },
            clock,
        )
    }

    fn record(&self, t: Instant, n: usize, r: Option<&zapspec_phi::PhiResult>) {
        let mut c = self.clock.get();
        c.seconds += t.elapsed().as_secs_f64();
        c.calls += 1;
        c.candidates += n as u64;
        if let Some(Ok(w)) = r {
            c.forwards += w.forwards;
            c.rollouts += w.rollouts;
            c.constraint_ops += w.constraint_ops;
        }
        self.clock.set(c);
    }
}

impl<C: Constraint, E: PhiEstimator<C, NoModel>> PhiEstimator<C, NoModel> for Timed<E> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn log_phi_into(
        &mut self,
        q: &zapspec_phi::PhiQuery<'_, C>,
        model: &mut NoModel,
        out: &mut [f64],
    ) -> zapspec_phi::PhiResult {
        let t = Instant::now();
        let r = self.inner.log_phi_into(q, model, out);
        self.record(t, q.mask.count(), Some(&r));
        r
    }
    fn log_phi_shifted(
        &mut self,
        q: &zapspec_phi::PhiQuery<'_, C>,
        model: &mut NoModel,
        out: &mut [f64],
    ) -> zapspec_phi::PhiResult {
        let t = Instant::now();
        let r = self.inner.log_phi_shifted(q, model, out);
        self.record(t, q.mask.count(), Some(&r));
        r
    }
    fn log_phi_shifted_compact(
        &mut self,
        q: &zapspec_phi::PhiQuery<'_, C>,
        model: &mut NoModel,
        valid: zapspec_phi::ValidList<'_>,
        out: &mut [f64],
    ) -> Option<zapspec_phi::PhiResult> {
        let t = Instant::now();
        let r = self.inner.log_phi_shifted_compact(q, model, valid, out)?;
        self.record(t, valid.ids.len(), Some(&r));
        Some(r)
    }
}

#[derive(serde::Serialize, Clone)]
pub(crate) struct Row {
    pub(crate) variant: String,
    pub(crate) tokens: usize,
    pub(crate) target_calls: usize,
    pub(crate) draft_calls: usize,
    pub(crate) rounds: usize,
    pub(crate) accepted: usize,
    /// Drafted nodes (tree mode: every node proposed) and the nodes the
    /// target scored (after the constraint's cut).
    pub(crate) nodes_drafted: usize,
    pub(crate) nodes_scored: usize,
    pub(crate) seconds: f64,
    /// Stopped at `--max-tokens` before EOS.
    pub(crate) capped: bool,
    pub(crate) valid: Option<bool>,
    pub(crate) same_as_plain: Option<bool>,
    /// Edit mode: the output is the edited document (as JSON values).
    pub(crate) edit_applied: Option<bool>,
    /// Φ-study mode: the Φ estimator's own work ([`PhiClock`]).
    #[serde(default)]
    pub(crate) phi: Option<PhiClock>,
    pub(crate) text: String,
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn run<C, D, F>(
    name: &str,
    m: &SmolLm2,
    base: &CausalLm,
    constraint: C,
    drafter: D,
    fvo: Option<F>,
    prompt: &[TokenId],
    gamma: usize,
    args: &Args,
    validator: Option<&jsonschema::Validator>,
) -> Result<(Row, Vec<TokenId>)>
where
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    run_shaped(
        name, m, base, constraint, drafter, fvo, prompt, gamma, None, args, validator,
    )
}

/// A draft-tree shape and how its sampled nodes are verified.
type TreeMode = (TreeConfig, TreeVerify);

/// [`run`] with a draft-tree shape (`Some`: tree mode).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_shaped<C, D, F>(
    name: &str,
    m: &SmolLm2,
    base: &CausalLm,
    constraint: C,
    drafter: D,
    fvo: Option<F>,
    prompt: &[TokenId],
    gamma: usize,
    tree: Option<TreeMode>,
    args: &Args,
    validator: Option<&jsonschema::Validator>,
) -> Result<(Row, Vec<TokenId>)>
where
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    let b = Builder::new(base.clone(), constraint)
        .drafter(drafter)
        .gamma(gamma)
        .seed(args.seed)
        .max_tokens(args.max_tokens);
    let b = if args.sampled || args.tree_sampled {
        b
    } else {
        b.greedy()
    };
    let b = match tree {
        Some((shape, how)) => b.tree(shape).tree_verify(how),
        None => b,
    };
    let t = Instant::now();
    // a run that reaches the cap is reported, not fatal
    let (tokens, stats, capped) = match fvo {
        Some(phi) => gen(b.fvo_spec(phi), prompt)?,
        None => gen(b, prompt)?,
    };
    let seconds = t.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&m.vocab.decode(&tokens)).into_owned();
    let valid = validator
        .map(|v| serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|j| v.is_valid(&j)));
    Ok((
        Row {
            variant: name.into(),
            tokens: tokens.len(),
            target_calls: stats.target_calls,
            draft_calls: stats.draft_calls,
            rounds: stats.rounds,
            accepted: stats.accepted,
            nodes_drafted: stats.nodes_drafted,
            nodes_scored: stats.nodes_scored,
            seconds,
            capped,
            valid,
            same_as_plain: None,
            edit_applied: None,
            phi: None,
            text,
        },
        tokens,
    ))
}

fn gen<M, C, D, F>(
    b: Builder<M, C, D, F>,
    prompt: &[TokenId],
) -> Result<(Vec<TokenId>, zapspec::RoundStats, bool)>
where
    M: LanguageModel,
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    let g = b.build()?.generate(prompt)?;
    let capped = g.stop == zapspec::StopReason::MaxTokens;
    Ok((g.tokens, g.stats, capped))
}

/// The llguidance-masked row: the same loop with llguidance's matcher as
/// the constraint (its compact JSON, like zapspec's); a schema llguidance
/// refuses gives an empty row (no tokens, validity unknown) that says so.
#[allow(clippy::too_many_arguments)]
pub(crate) fn llg_run<D: Drafter>(
    name: &str,
    m: &SmolLm2,
    base: &CausalLm,
    factory: &ParserFactory,
    schema: &serde_json::Value,
    drafter: D,
    prompt: &[TokenId],
    gamma: usize,
    args: &Args,
    validator: Option<&jsonschema::Validator>,
) -> Result<(Row, Vec<TokenId>)> {
    let grammar = TopLevelGrammar::from_json_schema(compact_schema(schema));
    match LlgConstraint::new(factory, grammar, &m.vocab) {
        Ok(c) => run(
            name,
            m,
            base,
            c,
            drafter,
            None::<OneStepCheap>,
            prompt,
            gamma,
            args,
            validator,
        ),
        Err(e) => Ok((
            Row {
                variant: name.into(),
                tokens: 0,
                target_calls: 0,
                draft_calls: 0,
                rounds: 0,
                accepted: 0,
                nodes_drafted: 0,
                nodes_scored: 0,
                seconds: 0.0,
                capped: false,
                valid: None,
                same_as_plain: None,
                edit_applied: None,
                phi: None,
                text: format!("llguidance refused the schema: {e}"),
            },
            Vec::new(),
        )),
    }
}
