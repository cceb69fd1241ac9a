//! Structural biases of the `zapspec` builder's pipelines on **open**
//! grammars (infinite languages), SmolLM2-135M-Instruct after a ChatML
//! prompt: the law of what each pipeline writes, on open grammars.
//!
//! Three tasks, one statistic family each:
//!
//! - `length`: a JSON array of integers with no `maxItems` (items, output
//!   tokens);
//! - `depth`: nested lists of digits, a GBNF grammar (maximum nesting depth,
//!   digits);
//! - `keys`: an object with four optional properties, no `required`, written
//!   in any key order (`PropertyOrder::Any`: the set, count and order of the
//!   keys present).
//!
//! The reference is rejection sampling from the *unconstrained* model at the
//! same temperature: a completion is sampled up to EOS or `--max-tokens`
//! and accepted iff its text is a member of the language, checked without
//! the Earley engine (schemas: the `jsonschema` crate plus the whitespace
//! and key-order form the constraint enforces; GBNF: the reference
//! recognizer `zapspec_grammar::reference::Recognizer`). Accepted samples are
//! exact draws of μ*, the model conditioned on the language (and on ending
//! within the cap). The pipelines — plain constrained sampling, Leviathan
//! with prompt lookup (both μ^proj), FVO-Spec with OneStep-Cheap and with
//! MC(k) — each draw `--draws` outputs (MC: `--mc-draws`), every output
//! checked by the same checker. Per statistic: histogram, mean ± standard
//! error, TV between the histograms, χ² homogeneity test on pooled cells,
//! Mann-Whitney U (numeric statistics), and the TV noise floor of two
//! samples of these sizes from the reference's histogram.
//!
//! `cargo run --profile release-fast -p examples --bin compose_bias -- [--draws N] [--mc-draws N] [--max-tokens T] [--seed S] [--tasks length,depth,keys] [--probe N]`

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{anyhow, Result};
use clap::Parser;
use rand::Rng;
use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};
use zapspec::{
    Builder, CandidateCut, Constraint, Drafter, LanguageModel, MonteCarlo, MonteCarloConfig,
    NoDraft, OneStepCheap, PhiEstimator, PromptLookup, WithModel,
};
use zapspec_core::prob::seeded_rng;
use zapspec_grammar::reference::Recognizer;
use zapspec_grammar::Grammar;
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, PropertyOrder, Whitespace};
use zapspec_phi::NoModel;
use zapspec_verify::MemoLm;

use examples::fvo::progress;
use examples::report::{write_json, MarkdownTable};
use examples::smollm2::SmolLm2;
use zapspec_backend::{CausalLm, GgufWeights};
use zapspec_vocab::Message;

#[derive(Parser)]
#[command(
    about = "Structural biases of the zapspec pipelines on open grammars, against rejection sampling"
)]
struct Args {
    /// Outputs per pipeline (and accepted reference draws wanted).
    #[arg(long, default_value_t = 200)]
    draws: usize,
    /// Outputs of the MC(k) pipeline (expensive: rollouts of the model).
    #[arg(long, default_value_t = 60)]
    mc_draws: usize,
    /// Rollouts per candidate of MC(k); 0 skips the MC row.
    #[arg(long, default_value_t = 2)]
    mc_k: usize,
    /// Rollout horizon of MC(k).
    #[arg(long, default_value_t = 8)]
    mc_horizon: usize,
    /// Candidates MC scores (the head of A_t under p, top-p 0.99).
    #[arg(long, default_value_t = 4)]
    mc_cut_max: usize,
    /// Token cap of every sample (EOS included); longer samples are cut
    /// (reference: rejected; pipelines: counted as cut).
    #[arg(long, default_value_t = 40)]
    max_tokens: usize,
    /// Most unconstrained draws of the reference per task.
    #[arg(long, default_value_t = 1500)]
    max_attempts: usize,
    /// Draft block length γ.
    #[arg(long, default_value_t = 4)]
    gamma: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Tasks to run (comma-separated): length, depth, keys.
    #[arg(long, value_delimiter = ',', default_value = "length,depth,keys")]
    tasks: Vec<String>,
    /// Only draw this many unconstrained samples per task, print them with
    /// the checker's verdict, and exit.
    #[arg(long, default_value_t = 0)]
    probe: usize,
    #[arg(long, default_value = "examples/results/compose")]
    out: std::path::PathBuf,
    /// Stem of the output files under `--out`.
    #[arg(long, default_value = "compose_bias")]
    name: String,
}

// ---------------------------------------------------------------- tasks

/// The key-set schema's properties, in schema order.
const KEYS: [&str; 4] = ["name", "age", "city", "email"];

/// The nested-lists grammar (Python's list notation, `", "` separators).
const NESTED_GBNF: &str = r#"root ::= list
list ::= "[" ( elem ( ", " elem )* )? "]"
elem ::= [0-9] | list
"#;

enum Lang {
    Schema(serde_json::Value),
    Gbnf(&'static str),
}

struct Task {
    name: &'static str,
    what: &'static str,
    lang: Lang,
    /// One example exchange (user, assistant) before the question.
    example: (&'static str, &'static str),
    prompt: &'static str,
}

fn tasks() -> Vec<Task> {
    vec![
        Task {
            name: "length",
            what: "a JSON array of integers, no maxItems",
            lang: Lang::Schema(serde_json::json!({
                "type": "array",
                "items": {"type": "integer"}
            })),
            example: ("Give me a list of some even numbers as a JSON array.", "[2, 4, 6, 8]"),
            prompt: "Give me a list of some prime numbers as a JSON array.",
        },
        Task {
            name: "depth",
            what: "nested lists of digits (GBNF, any depth)",
            lang: Lang::Gbnf(NESTED_GBNF),
            example: ("Write a nested Python list of single digits.", "[1, [2, 3], [[4]]]"),
            prompt: "Write another nested Python list of single digits.",
        },
        Task {
            name: "keys",
            what: "an object with four optional properties (name, age, city, email), any key order",
            lang: Lang::Schema(serde_json::json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "age": {"type": "integer"},
                    "city": {"type": "string"},
                    "email": {"type": "string"}
                },
                "additionalProperties": false
            })),
            example: (
                "Describe a person as a JSON object with some of the keys name, age, city, email.",
                "{\"name\": \"Ana\", \"city\": \"Lima\"}",
            ),
            prompt: "Describe another person as a JSON object with some of the keys name, age, city, email.",
        },
    ]
}

/// JSON with Python's default separators (`", "`, `": "`), keys in the
/// order they appear (`serde_json` keeps insertion order here).
fn py_json(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Array(xs) => format!(
            "[{}]",
            xs.iter().map(py_json).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, x)| format!("{}: {}", Value::String(k.clone()), py_json(x)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// The independent checker of a task's language and its statistics.
struct Checker {
    validator: Option<jsonschema::Validator>,
    recognizer: Recognizer,
}

/// One member's statistics: (name, value as a histogram cell, numeric value).
type Stats = Vec<(&'static str, String, Option<f64>)>;

impl Checker {
    fn new(task: &Task, grammar: &Grammar) -> Result<Self> {
        let validator = match &task.lang {
            Lang::Schema(s) => Some(
                jsonschema::validator_for(s)
                    .map_err(|e| anyhow!("schema does not compile: {e}"))?,
            ),
            Lang::Gbnf(_) => None,
        };
        Ok(Checker {
            validator,
            recognizer: Recognizer::new(grammar)?,
        })
    }

    /// Whether `text` is in the language: schemas — valid under the
    /// `jsonschema` crate and written in the constraint's form (Python
    /// separators, no other whitespace, no duplicate key); GBNF — the
    /// reference recognizer. Also whether the reference recognizer (of the
    /// compiled grammar) agrees.
    fn member(&self, text: &str) -> (bool, bool) {
        let rec = self.recognizer.recognizes(text.as_bytes());
        let ok = match &self.validator {
            Some(v) => serde_json::from_str::<serde_json::Value>(text)
                .is_ok_and(|j| v.is_valid(&j) && py_json(&j) == text),
            None => rec,
        };
        (ok, rec == ok)
    }

    /// The statistics of a member.
    fn stats(task: &str, text: &str, tokens: usize) -> Stats {
        let mut s: Stats = Vec::new();
        match task {
            "length" => {
                let n = serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|v| v.as_array().map(|a| a.len()))
                    .unwrap_or(0);
                s.push(("items", n.to_string(), Some(n as f64)));
            }
            "depth" => {
                let (mut d, mut max, mut digits) = (0usize, 0usize, 0usize);
                for b in text.bytes() {
                    match b {
                        b'[' => {
                            d += 1;
                            max = max.max(d);
                        }
                        b']' => d = d.saturating_sub(1),
                        b'0'..=b'9' => digits += 1,
                        _ => {}
                    }
                }
                s.push(("max depth", max.to_string(), Some(max as f64)));
                s.push(("digits", digits.to_string(), Some(digits as f64)));
            }
            _ => {
                let keys: Vec<String> = serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|v| v.as_object().map(|m| m.keys().cloned().collect()))
                    .unwrap_or_default();
                s.push((
                    "keys present",
                    keys.len().to_string(),
                    Some(keys.len() as f64),
                ));
                let mut set: Vec<&str> = KEYS
                    .iter()
                    .copied()
                    .filter(|k| keys.iter().any(|x| x == k))
                    .collect();
                set.sort_by_key(|k| KEYS.iter().position(|x| x == k));
                s.push(("key set", format!("{{{}}}", set.join(",")), None));
                s.push(("key order", keys.join(","), None));
                let canonical = keys
                    .iter()
                    .map(|k| KEYS.iter().position(|x| x == k))
                    .collect::<Vec<_>>()
                    .windows(2)
                    .all(|w| w[0] < w[1]);
                s.push((
                    "keys in schema order",
                    canonical.to_string(),
                    Some(if canonical { 1.0 } else { 0.0 }),
                ));
            }
        }
        s.push(("output tokens", tokens.to_string(), Some(tokens as f64)));
        s
    }
}

// ------------------------------------------------------------ sampling

/// What one pipeline (or the reference) drew.
#[derive(Serialize, Default)]
struct Sample {
    pipeline: String,
    /// Outputs kept (reference: accepted).
    n: usize,
    /// Attempts (reference: unconstrained draws).
    attempts: usize,
    /// Draws cut by the token cap.
    cut: usize,
    /// Kept outputs the independent checker accepts.
    valid: usize,
    /// Outputs where the reference recognizer of the compiled grammar
    /// disagrees with the checker.
    disagree: usize,
    seconds: f64,
    /// Model calls of the target (forwards asked of it).
    target_calls: usize,
    texts: Vec<String>,
    tokens: Vec<usize>,
}

/// Draws until `want` outputs are kept or `attempts` tries are spent;
/// `keep` says whether a checked output is kept (reference: members only).
#[allow(clippy::too_many_arguments)]
fn run<M, C, D, F>(
    prompt: &[zapspec_core::TokenId],
    label: &str,
    b: Builder<M, C, D, F>,
    want: usize,
    attempts: usize,
    reference: bool,
    checker: &Checker,
    vocab: &zapspec_vocab::TokenVocab,
    probe: bool,
) -> Result<Sample>
where
    M: LanguageModel,
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    let mut p = b.build()?;
    let mut s = Sample {
        pipeline: label.to_string(),
        ..Sample::default()
    };
    let t = Instant::now();
    let pb = progress(want, label.to_string());
    while s.n < want && s.attempts < attempts {
        s.attempts += 1;
        let g = p.generate(prompt)?;
        if g.stop == zapspec::StopReason::MaxTokens {
            s.cut += 1;
            if probe {
                println!("  [cut]");
            }
            continue;
        }
        s.target_calls += g.stats.target_calls;
        let text = String::from_utf8_lossy(&vocab.decode(&g.tokens)).into_owned();
        let (ok, agree) = checker.member(&text);
        if probe {
            println!("  [{}] {text:?}", if ok { "member" } else { "no" });
        }
        if reference && !ok {
            continue;
        }
        s.n += 1;
        s.valid += ok as usize;
        s.disagree += !agree as usize;
        s.texts.push(text);
        s.tokens.push(g.tokens.len());
        pb.set_position(s.n as u64);
    }
    pb.finish_and_clear();
    s.seconds = t.elapsed().as_secs_f64();
    eprintln!(
        "{label}: {} kept of {} ({} cut), {} valid, {:.1} s",
        s.n, s.attempts, s.cut, s.valid, s.seconds
    );
    Ok(s)
}

/// Rejection sampling from the unconstrained model at temperature 1: each
/// attempt samples tokens from the model's softmax after the prompt until
/// EOS or `cap` tokens (EOS included), and is accepted iff its text is a
/// member. An attempt is abandoned as soon as its bytes are no viable
/// prefix of the language (reference recognizer): every prefix of a member
/// is viable, so this changes no accepted draw's law, only the cost. Rows
/// are memoised (`MemoLm`): a context seen before costs no forward.
#[allow(clippy::too_many_arguments)]
fn reference_sample(
    lm: &mut MemoLm<CausalLm>,
    prompt: &[zapspec::TokenId],
    eos: zapspec::TokenId,
    want: usize,
    attempts: usize,
    cap: usize,
    checker: &Checker,
    vocab: &zapspec_vocab::TokenVocab,
    seed: u64,
    probe: bool,
) -> Result<Sample> {
    let mut rng = seeded_rng(seed);
    let label = "reference μ* (rejection sampling)";
    let mut s = Sample {
        pipeline: label.to_string(),
        ..Sample::default()
    };
    let t = Instant::now();
    let pb = progress(want, label.to_string());
    let misses0 = lm.misses();
    while s.n < want && s.attempts < attempts {
        s.attempts += 1;
        let mut ctx = prompt.to_vec();
        let mut bytes: Vec<u8> = Vec::new();
        let mut out: Vec<zapspec::TokenId> = Vec::new();
        let mut ended = false;
        let mut viable = true;
        while out.len() < cap {
            let l = lm.logits_for(&ctx)?;
            let lse =
                zapspec_core::prob::logsumexp(&l.iter().map(|&x| x as f64).collect::<Vec<_>>());
            let mut u: f64 = rng.random::<f64>();
            let mut tok = (l.len() - 1) as zapspec::TokenId;
            for (i, &x) in l.iter().enumerate() {
                u -= (x as f64 - lse).exp();
                if u < 0.0 {
                    tok = i as zapspec::TokenId;
                    break;
                }
            }
            if tok == eos {
                ended = true;
                break;
            }
            out.push(tok);
            ctx.push(tok);
            bytes.extend(vocab.decode(&[tok]));
            if !checker.recognizer.is_viable_prefix(&bytes) {
                viable = false;
                break;
            }
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if viable && !ended {
            s.cut += 1;
            if probe {
                println!("  [cut] {text:?}");
            }
            continue;
        }
        let (ok, agree) = if ended {
            checker.member(&text)
        } else {
            (false, true)
        };
        if probe && (ok || s.attempts <= 20) {
            println!("  [{}] {text:?}", if ok { "member" } else { "no" });
        }
        s.disagree += !agree as usize;
        if !ok {
            continue;
        }
        s.n += 1;
        s.valid += 1;
        s.texts.push(text);
        s.tokens.push(out.len());
        pb.set_position(s.n as u64);
    }
    pb.finish_and_clear();
    s.seconds = t.elapsed().as_secs_f64();
    s.target_calls = lm.misses() - misses0;
    eprintln!(
        "{label}: {} accepted of {} ({} cut), {} forwards, {:.1} s",
        s.n, s.attempts, s.cut, s.target_calls, s.seconds
    );
    Ok(s)
}

// ----------------------------------------------------------- statistics

/// One statistic of one pipeline against the reference.
#[derive(Serialize)]
struct Compare {
    task: String,
    statistic: String,
    pipeline: String,
    n: usize,
    n_ref: usize,
    mean: Option<f64>,
    se: Option<f64>,
    mean_ref: Option<f64>,
    se_ref: Option<f64>,
    /// Smallest mean difference detectable at 80 % power, α = 0.05.
    mde: Option<f64>,
    tv: f64,
    /// TV of two samples of these sizes from the reference's histogram
    /// (mean over replicates).
    tv_floor: f64,
    chi2_p: f64,
    chi2_dof: usize,
    mw_p: Option<f64>,
    hist: BTreeMap<String, usize>,
    hist_ref: BTreeMap<String, usize>,
}

fn mean_se(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    if x.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = x.iter().sum::<f64>() / n;
    let var = if x.len() > 1 {
        x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, (var / n).sqrt())
}

fn histogram(cells: &[String]) -> BTreeMap<String, usize> {
    let mut h = BTreeMap::new();
    for c in cells {
        *h.entry(c.clone()).or_insert(0) += 1;
    }
    h
}

fn tv_hist(a: &BTreeMap<String, usize>, b: &BTreeMap<String, usize>) -> f64 {
    let (na, nb) = (
        a.values().sum::<usize>().max(1) as f64,
        b.values().sum::<usize>().max(1) as f64,
    );
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    0.5 * keys
        .iter()
        .map(|k| {
            (a.get(*k).copied().unwrap_or(0) as f64 / na
                - b.get(*k).copied().unwrap_or(0) as f64 / nb)
                .abs()
        })
        .sum::<f64>()
}

/// χ² test of homogeneity of two samples over their cells, the rarest cells
/// (by pooled count) merged until every expected count is ≥ 5 (or two cells
/// remain). Returns (p, dof); p = 1 with a single cell.
fn chi2_two_sample(a: &BTreeMap<String, usize>, b: &BTreeMap<String, usize>) -> (f64, usize) {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut cells: Vec<(f64, f64)> = keys
        .iter()
        .map(|k| {
            (
                a.get(*k).copied().unwrap_or(0) as f64,
                b.get(*k).copied().unwrap_or(0) as f64,
            )
        })
        .collect();
    let (na, nb) = (
        cells.iter().map(|c| c.0).sum::<f64>(),
        cells.iter().map(|c| c.1).sum::<f64>(),
    );
    if na == 0.0 || nb == 0.0 {
        return (f64::NAN, 0);
    }
    let n = na + nb;
    let min_share = na.min(nb) / n;
    // merge the two rarest cells while one's smaller expected count is < 5
    loop {
        cells.sort_by(|x, y| (x.0 + x.1).total_cmp(&(y.0 + y.1)));
        if cells.len() <= 2 || (cells[0].0 + cells[0].1) * min_share >= 5.0 {
            break;
        }
        let c0 = cells.remove(0);
        cells[0].0 += c0.0;
        cells[0].1 += c0.1;
    }
    if cells.len() < 2 {
        return (1.0, 0);
    }
    let mut stat = 0.0;
    for &(oa, ob) in &cells {
        let tot = oa + ob;
        let (ea, eb) = (tot * na / n, tot * nb / n);
        stat += (oa - ea).powi(2) / ea + (ob - eb).powi(2) / eb;
    }
    let dof = cells.len() - 1;
    let p = ChiSquared::new(dof as f64)
        .map(|d| 1.0 - d.cdf(stat))
        .unwrap_or(f64::NAN);
    (p, dof)
}

/// Two-sided Mann-Whitney U test (normal approximation, tie-corrected).
fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let (mut r1, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        for x in &all[i..=j] {
            if x.1 {
                r1 += rank;
            }
        }
        i = j + 1;
    }
    let u = r1 - n1 * (n1 + 1.0) / 2.0;
    let nn = n1 + n2;
    let var = n1 * n2 / 12.0 * ((nn + 1.0) - ties / (nn * (nn - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = (u - n1 * n2 / 2.0).abs() / var.sqrt();
    let normal = Normal::new(0.0, 1.0).ok()?;
    Some((2.0 * (1.0 - normal.cdf(z))).min(1.0))
}

/// Mean TV between two samples of sizes `n1`, `n2` drawn from `h`.
fn tv_floor<R: Rng>(rng: &mut R, h: &BTreeMap<String, usize>, n1: usize, n2: usize) -> f64 {
    let cells: Vec<(&String, usize)> = h.iter().map(|(k, &v)| (k, v)).collect();
    let total: usize = cells.iter().map(|c| c.1).sum();
    if total == 0 || n1 == 0 || n2 == 0 {
        return f64::NAN;
    }
    let draw = |rng: &mut R, n: usize| {
        let mut out = BTreeMap::new();
        for _ in 0..n {
            let mut u = rng.random_range(0..total);
            for (k, c) in &cells {
                if u < *c {
                    *out.entry((*k).clone()).or_insert(0) += 1;
                    break;
                }
                u -= c;
            }
        }
        out
    };
    let reps = 100;
    (0..reps)
        .map(|_| {
            let a = draw(rng, n1);
            let b = draw(rng, n2);
            tv_hist(&a, &b)
        })
        .sum::<f64>()
        / reps as f64
}

fn compare<R: Rng>(task: &str, reference: &Sample, s: &Sample, rng: &mut R) -> Vec<Compare> {
    let stats_of = |x: &Sample| -> Vec<Stats> {
        x.texts
            .iter()
            .zip(&x.tokens)
            .map(|(t, &k)| Checker::stats(task, t, k))
            .collect()
    };
    let (ra, sa) = (stats_of(reference), stats_of(s));
    let names: Vec<&'static str> = ra
        .first()
        .map(|v| v.iter().map(|x| x.0).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let cells = |v: &[Stats]| v.iter().map(|x| x[i].1.clone()).collect::<Vec<_>>();
        let nums = |v: &[Stats]| v.iter().filter_map(|x| x[i].2).collect::<Vec<_>>();
        let (hr, hs) = (histogram(&cells(&ra)), histogram(&cells(&sa)));
        let (xr, xs) = (nums(&ra), nums(&sa));
        let numeric = !xr.is_empty();
        let (mr, ser) = mean_se(&xr);
        let (ms, ses) = mean_se(&xs);
        let (chi2_p, chi2_dof) = chi2_two_sample(&hs, &hr);
        out.push(Compare {
            task: task.to_string(),
            statistic: name.to_string(),
            pipeline: s.pipeline.clone(),
            n: sa.len(),
            n_ref: ra.len(),
            mean: numeric.then_some(ms),
            se: numeric.then_some(ses),
            mean_ref: numeric.then_some(mr),
            se_ref: numeric.then_some(ser),
            mde: numeric.then_some(2.8 * (ser * ser + ses * ses).sqrt()),
            tv: tv_hist(&hs, &hr),
            tv_floor: tv_floor(rng, &hr, sa.len(), ra.len()),
            chi2_p,
            chi2_dof,
            mw_p: if numeric {
                mann_whitney(&xs, &xr)
            } else {
                None
            },
            hist: hs,
            hist_ref: hr,
        });
    }
    out
}

// ------------------------------------------------------------------ plot

fn plot_lengths(path: &std::path::Path, rows: &[&Compare]) -> Result<()> {
    use plotters::prelude::*;
    if rows.is_empty() {
        return Ok(());
    }
    let max_x = rows
        .iter()
        .flat_map(|r| r.hist.keys().chain(r.hist_ref.keys()))
        .filter_map(|k| k.parse::<usize>().ok())
        .max()
        .unwrap_or(1)
        .min(30);
    let share = |h: &BTreeMap<String, usize>, x: usize| {
        let n = h.values().sum::<usize>().max(1) as f64;
        h.get(&x.to_string()).copied().unwrap_or(0) as f64 / n
    };
    let mut series: Vec<(String, Vec<f64>)> = vec![(
        "reference μ* (rejection)".to_string(),
        (0..=max_x).map(|x| share(&rows[0].hist_ref, x)).collect(),
    )];
    for r in rows {
        series.push((
            r.pipeline.clone(),
            (0..=max_x).map(|x| share(&r.hist, x)).collect(),
        ));
    }
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .fold(0.0, f64::max)
        * 1.1;
    let root = BitMapBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Array length (items) per pipeline, SmolLM2-135M, T = 1",
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.5f64..max_x as f64 + 0.5, 0f64..ymax.max(0.05))?;
    chart
        .configure_mesh()
        .x_desc("items")
        .y_desc("share")
        .draw()?;
    let k = series.len() as f64;
    let w = 0.8 / k;
    for (j, (name, ys)) in series.iter().enumerate() {
        let color = Palette99::pick(j).to_rgba();
        chart
            .draw_series(ys.iter().enumerate().map(|(x, &y)| {
                let x0 = x as f64 - 0.4 + j as f64 * w;
                Rectangle::new([(x0, 0.0), (x0 + w, y)], color.filled())
            }))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

// ------------------------------------------------------------------ main

#[derive(Serialize)]
struct TaskResult {
    task: String,
    what: String,
    language: String,
    prompt: String,
    samples: Vec<Sample>,
    compare: Vec<Compare>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let t_all = Instant::now();
    let m = SmolLm2::load(GgufWeights::default(), 2048)?;
    let vocab = &*m.vocab;
    let eos = m.chat.im_end;
    let mut results: Vec<TaskResult> = Vec::new();
    for (ti, task) in tasks().into_iter().enumerate() {
        if !args.tasks.iter().any(|t| t == task.name) {
            continue;
        }
        // the language: one grammar for the Earley constraint and the
        // reference recognizer
        let grammar = match &task.lang {
            Lang::Schema(s) => {
                let opts = JsonSchemaOptions {
                    whitespace: Whitespace::Separators {
                        item_separator: ", ".into(),
                        key_separator: ": ".into(),
                    },
                    property_order: PropertyOrder::Any,
                    ..JsonSchemaOptions::default()
                };
                compile_json_schema(s, &opts)?
            }
            Lang::Gbnf(src) => Grammar::from_gbnf(src)?,
        };
        let language = match &task.lang {
            Lang::Schema(s) => format!(
                "JSON Schema `{}`, Python separators (`\", \"`, `\": \"`), keys in any order",
                serde_json::to_string(s)?
            ),
            Lang::Gbnf(src) => format!("GBNF `{}`", src.trim().replace('\n', " ; ")),
        };
        let checker = Checker::new(&task, &grammar)?;
        let c = zapspec::earley(m.vocab.clone(), grammar.clone())?;
        let prompt = m.chat.encode(
            vocab,
            &[
                Message::user(task.example.0),
                Message::assistant(task.example.1),
                Message::user(task.prompt),
            ],
            true,
        )?;
        eprintln!("task {}: {}", task.name, task.what);
        let seed = |k: u64| {
            args.seed
                .wrapping_mul(1_000_003)
                .wrapping_add(ti as u64 * 100 + k)
        };
        let target = || MemoLm::new(m.lm.clone());
        let base = |k: u64| {
            Builder::new(target(), c.clone())
                .gamma(args.gamma)
                .temperature(1.0)
                .max_tokens(args.max_tokens)
                .seed(seed(k))
        };
        let mut ref_lm = target();
        if args.probe > 0 {
            println!("task {} — prompt {:?}", task.name, task.prompt);
            let s = reference_sample(
                &mut ref_lm,
                &prompt,
                eos,
                args.probe,
                args.max_attempts,
                args.max_tokens,
                &checker,
                vocab,
                seed(0),
                true,
            )?;
            println!(
                "  {} members of {} ({} cut), {} forwards, {:.1} s",
                s.valid, s.attempts, s.cut, s.target_calls, s.seconds
            );
            continue;
        }
        let reference = reference_sample(
            &mut ref_lm,
            &prompt,
            eos,
            args.draws,
            args.max_attempts,
            args.max_tokens,
            &checker,
            vocab,
            seed(0),
            false,
        )?;
        drop(ref_lm);
        let mut samples = vec![
            run(
                &prompt,
                "plain constrained (μ^proj)",
                base(1),
                args.draws,
                args.draws,
                false,
                &checker,
                vocab,
                false,
            )?,
            run(
                &prompt,
                "Leviathan + prompt lookup (μ^proj)",
                base(2).drafter(PromptLookup::default()),
                args.draws,
                args.draws,
                false,
                &checker,
                vocab,
                false,
            )?,
            run(
                &prompt,
                "FVO-Spec OneStep-Cheap",
                base(3).drafter(NoDraft).fvo_spec(OneStepCheap::new()),
                args.draws,
                args.draws,
                false,
                &checker,
                vocab,
                false,
            )?,
        ];
        if args.mc_k > 0 && args.mc_draws > 0 {
            let cfg = MonteCarloConfig {
                k: args.mc_k,
                horizon: args.mc_horizon,
                seed: seed(5),
                cut: CandidateCut::new(0.99, args.mc_cut_max),
                batched: true,
                ..Default::default()
            };
            let phi =
                WithModel::new(MonteCarlo::with_config(cfg), m.lm.clone()).with_prompt(&prompt);
            samples.push(run(
                &prompt,
                &format!(
                    "FVO-Spec MC(k={}, h={}){}",
                    args.mc_k,
                    args.mc_horizon,
                    cfg.cut.label()
                ),
                base(4).drafter(NoDraft).fvo_spec(phi),
                args.mc_draws,
                args.mc_draws,
                false,
                &checker,
                vocab,
                false,
            )?);
        }
        let mut rng = seeded_rng(seed(99));
        let mut cmp = Vec::new();
        for s in &samples {
            cmp.extend(compare(task.name, &reference, s, &mut rng));
        }
        let mut all = vec![reference];
        all.extend(samples);
        results.push(TaskResult {
            task: task.name.to_string(),
            what: task.what.to_string(),
            language,
            prompt: task.prompt.to_string(),
            samples: all,
            compare: cmp,
        });
    }
    if args.probe > 0 {
        return Ok(());
    }
    let wall = t_all.elapsed().as_secs_f64();
    write_report(&args, &results, wall)
}

/// `x` to `d` digits; "—" for none, NaN or an infinity.
fn fmt_opt(x: Option<f64>, d: usize) -> String {
    x.filter(|v| v.is_finite())
        .map(|v| format!("{v:.d$}"))
        .unwrap_or_else(|| "—".into())
}

fn top_cells(h: &BTreeMap<String, usize>, k: usize) -> String {
    let n = h.values().sum::<usize>().max(1) as f64;
    let mut v: Vec<(&String, &usize)> = h.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .take(k)
        .map(|(c, m)| format!("`{c}` {:.2}", **m as f64 / n))
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_report(args: &Args, results: &[TaskResult], wall: f64) -> Result<()> {
    let cmd = format!(
        "RAYON_NUM_THREADS=1 nice -n 10 target/release-fast/compose_bias --draws {} --mc-draws {} --mc-k {} --mc-horizon {} --mc-cut-max {} --max-tokens {} --max-attempts {} --gamma {} --seed {} --tasks {}",
        args.draws,
        args.mc_draws,
        args.mc_k,
        args.mc_horizon,
        args.mc_cut_max,
        args.max_tokens,
        args.max_attempts,
        args.gamma,
        args.seed,
        args.tasks.join(",")
    );
    let mut md = format!(
        "# Structural biases on open grammars: the `zapspec` pipelines against rejection sampling (SmolLM2-135M-Instruct)\n\n\
         Command (built with `cargo build --profile release-fast -p examples --bin compose_bias`): `{cmd}`. \
         Wall time of the whole run: {wall:.0} s on the shared 2-core machine. Temperature 1 everywhere, no top-p. \
         Token cap: {} tokens per sample (EOS included).\n\n\
         Reference: rejection sampling from the **unconstrained** model after the same prompt — a completion is drawn to EOS \
         or the cap and accepted iff its text is in the language, checked without the Earley engine (schemas: the `jsonschema` \
         crate, plus the form the constraint enforces — Python separators `\", \"` / `\": \"`, no other whitespace, no \
         duplicate key; GBNF: the reference recognizer `zapspec_grammar::reference::Recognizer`). Accepted draws are exact draws \
         of μ* restricted to outputs within the cap. Every pipeline output is checked by the same checker (\"valid\"); \
         \"recognizer disagrees\" counts outputs where the reference recognizer of the compiled grammar disagrees with that checker.\n\n\
         Per statistic: mean ± standard error; MDE: the smallest mean difference the two sample sizes detect at 80 % power \
         (α = 0.05, 2.8 · √(se² + se_ref²)); TV between the two histograms, beside the TV floor (mean TV of two samples of the \
         same sizes drawn from the reference histogram — a TV near it is no evidence of bias); χ² homogeneity test on the 2 × K \
         table with the rarest cells pooled until each expected count is ≥ 5; Mann-Whitney U (two-sided, normal approximation, \
         tie-corrected) for numeric statistics.\n\n",
        args.max_tokens
    );
    for r in results {
        md.push_str(&format!(
            "## `{}`: {}\n\nLanguage: {}. Prompt (ChatML user turn): {:?}.\n\n",
            r.task, r.what, r.language, r.prompt
        ));
        let mut t = MarkdownTable::new(&[
            "sampler",
            "kept",
            "attempts",
            "cut by the cap",
            "valid",
            "recognizer disagrees",
            "s",
            "s / kept",
            "target calls / kept",
        ]);
        for s in &r.samples {
            t.row(&[
                s.pipeline.clone(),
                s.n.to_string(),
                s.attempts.to_string(),
                format!(
                    "{} ({:.1} %)",
                    s.cut,
                    100.0 * s.cut as f64 / s.attempts.max(1) as f64
                ),
                format!("{}/{}", s.valid, s.n),
                s.disagree.to_string(),
                format!("{:.0}", s.seconds),
                format!("{:.2}", s.seconds / s.n.max(1) as f64),
                format!("{:.1}", s.target_calls as f64 / s.n.max(1) as f64),
            ]);
        }
        let reference = &r.samples[0];
        md.push_str(&t.render());
        md.push_str(&format!(
            "\nReference acceptance: {}/{} = {:.1} % of unconstrained draws ({} cut by the cap, {:.1} %).\n\n",
            reference.n,
            reference.attempts,
            100.0 * reference.n as f64 / reference.attempts.max(1) as f64,
            reference.cut,
            100.0 * reference.cut as f64 / reference.attempts.max(1) as f64
        ));
        let mut t = MarkdownTable::new(&[
            "statistic",
            "pipeline",
            "n / n_ref",
            "mean ± se",
            "reference mean ± se",
            "MDE",
            "TV",
            "TV floor",
            "χ² p (dof)",
            "Mann-Whitney p",
            "most common (pipeline)",
            "most common (reference)",
        ]);
        // A pipeline (or reference) with no kept output has no
        // distribution: its statistics are "—", not the NaN or 0.5 an empty
        // histogram computes to.
        let num = |x: f64, digits: usize| fmt_opt(Some(x), digits);
        let mean = |m: Option<f64>, s: Option<f64>| match (m, s) {
            (Some(m), Some(s)) if m.is_finite() && s.is_finite() => format!("{m:.2} ± {s:.2}"),
            _ => "—".into(),
        };
        for c in &r.compare {
            let empty = c.n == 0 || c.n_ref == 0;
            let cmp = |x: String| if empty { "—".to_string() } else { x };
            t.row(&[
                c.statistic.clone(),
                c.pipeline.clone(),
                format!("{}/{}", c.n, c.n_ref),
                mean(c.mean, c.se),
                mean(c.mean_ref, c.se_ref),
                cmp(fmt_opt(c.mde, 2)),
                cmp(num(c.tv, 3)),
                cmp(num(c.tv_floor, 3)),
                cmp(format!("{} ({})", num(c.chi2_p, 3), c.chi2_dof)),
                cmp(fmt_opt(c.mw_p, 3)),
                top_cells(&c.hist, 3),
                top_cells(&c.hist_ref, 3),
            ]);
        }
        md.push_str(&t.render());
        md.push('\n');
        md.push_str("Three outputs of each sampler:\n\n");
        for s in &r.samples {
            md.push_str(&format!(
                "- {}: {}\n",
                s.pipeline,
                s.texts
                    .iter()
                    .take(3)
                    .map(|x| format!("`{x}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        md.push('\n');
    }
    std::fs::create_dir_all(&args.out)?;
    let lengths: Vec<&Compare> = results
        .iter()
        .filter(|r| r.task == "length")
        .flat_map(|r| r.compare.iter().filter(|c| c.statistic == "items"))
        .collect();
    let png = args.out.join(format!("{}.png", args.name));
    // the plot is optional: a machine without a font still gets the tables
    let plotted = !lengths.is_empty()
        && examples::host::register_font()
            .and_then(|()| plot_lengths(&png, &lengths))
            .map_err(|e| eprintln!("no plot: {e}"))
            .is_ok();
    if plotted {
        md.push_str(&format!(
            "Length histograms: `{}`.\n\n",
            png.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        ));
    }
    println!("{md}");
    std::fs::write(args.out.join(format!("{}.md", args.name)), &md)?;
    let json = serde_json::json!({
        "command": cmd,
        "seed": args.seed,
        "wall_s": wall,
        "max_tokens": args.max_tokens,
        "tasks": results,
    });
    write_json(&args.out, &args.name, &json)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn py_json_writes_python_separators_in_key_order() {
        let v: serde_json::Value = serde_json::from_str(r#"{"b":[1,2],"a":"x"}"#).unwrap();
        assert_eq!(py_json(&v), r#"{"b": [1, 2], "a": "x"}"#);
    }

    #[test]
    fn tv_and_chi2_of_equal_and_disjoint_histograms() {
        let a = hist(&[("1", 50), ("2", 50)]);
        assert_eq!(tv_hist(&a, &a), 0.0);
        let (p, dof) = chi2_two_sample(&a, &a);
        assert!((p - 1.0).abs() < 1e-12 && dof == 1);
        let b = hist(&[("3", 40), ("4", 60)]);
        assert!((tv_hist(&a, &b) - 1.0).abs() < 1e-12);
        assert!(chi2_two_sample(&a, &b).0 < 1e-10);
    }

    #[test]
    fn mann_whitney_separates_shifted_samples() {
        let a: Vec<f64> = (0..50).map(|i| (i % 5) as f64).collect();
        assert!(mann_whitney(&a, &a).unwrap() > 0.99);
        let b: Vec<f64> = a.iter().map(|x| x + 3.0).collect();
        assert!(mann_whitney(&a, &b).unwrap() < 1e-6);
    }

    #[test]
    fn depth_statistics_count_nesting() {
        let s = Checker::stats("depth", "[1, [2, [3]], []]", 7);
        assert_eq!(s[0].2, Some(3.0));
        assert_eq!(s[1].2, Some(3.0));
    }
}
