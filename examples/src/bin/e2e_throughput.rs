//! End-to-end constrained generation on the real model (Formatron Table 1 /
//! Table 6 style): SmolLM2-135M-Instruct (Q4_1 GGUF, CPU) sampling under no
//! constraint, under zapspec's Earley matcher, and under llguidance, in the
//! same generation loop with the same prompts and seeds, on
//!
//! 1. MaskBench JSON Schemas (`--schemas` of them, drawn with `--seed` from
//!    the whole shared set, not from any tuning subset), each prompted with
//!    a natural instruction that quotes the schema;
//! 2. the generic JSON grammar (`grammar-xform/grammars/json.gbnf`; for
//!    llguidance the schema `{}`), with free-form JSON instructions;
//! 3. GeoQuery FunQL (`examples/data/funql.gbnf`, `funql.lark` for
//!    llguidance), few-shot semantic parsing of questions.
//!
//! Per run: generated tokens/s, complete objects/s, the share of a step
//! spent on the mask, and the fraction of outputs that are valid (JSON
//! Schema validity by the `jsonschema` crate; FunQL by zapspec's reference
//! recognizer of the grammar). Writes `e2e_throughput.{md,json}` to `--out`.
//!
//! ```sh
//! scripts/fetch-smollm2.sh
//! cargo run --profile release-fast -p examples --bin e2e_throughput -- --out examples/results/e2e-throughput
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use llguidance::api::TopLevelGrammar;
use llguidance::ParserFactory;
use zapspec_backend::{CausalLm, GgufWeights};
use zapspec_core::prob::{log_softmax, masked_log_softmax, sample_log, seeded_rng};
use zapspec_core::{Constraint, LanguageModel, TokenId, TokenSet, Vocabulary};
use zapspec_earley::{Engine, EngineConfig};
use zapspec_grammar::{parse_gbnf, simplify, Grammar, Recognizer, SimplifyConfig};
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions};
use zapspec_vocab::TokenVocab;

use examples::llg::{compact_schema, tok_env, LlgMatcher};
use examples::report::{write_json, MarkdownTable as Table};
use examples::smollm2::SmolLm2;

#[derive(Parser)]
#[command(about = "End-to-end constrained generation throughput on SmolLM2")]
struct Args {
    /// MaskBench directory.
    #[arg(long, default_value = "../shared/data/maskbench")]
    maskbench: PathBuf,
    /// Number of MaskBench schemas (drawn with --seed from the whole set).
    #[arg(long, default_value_t = 50)]
    schemas: usize,
    /// Generated tokens at most per output.
    #[arg(long, default_value_t = 96)]
    max_tokens: usize,
    /// Sampling temperature.
    #[arg(long, default_value_t = 0.7)]
    temperature: f32,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Longest schema text quoted in a prompt (bytes; longer ones are cut).
    #[arg(long, default_value_t = 3000)]
    max_schema_bytes: usize,
    /// Output directory.
    #[arg(long, default_value = "results/e2e")]
    out: PathBuf,
}

/// What constrains a run.
enum Guide {
    None,
    Zap(Box<zapspec_earley::EarleyMatcher>),
    Llg(Box<LlgMatcher>),
}

impl Guide {
    /// Writes the allowed tokens into `mask`; `false` when unconstrained.
    fn fill_mask(&mut self, mask: &mut TokenSet) -> Result<bool> {
        match self {
            Guide::None => return Ok(false),
            Guide::Zap(m) => m.fill_mask(mask),
            Guide::Llg(m) => m.fill_mask(mask)?,
        }
        Ok(true)
    }

    /// Feeds the sampled token to the constraint, if any.
    fn advance(&mut self, t: TokenId, eos: TokenId) -> Result<()> {
        match self {
            Guide::None => {}
            Guide::Zap(m) => m.advance(t)?,
            Guide::Llg(m) => m.advance(t, eos)?,
        }
        Ok(())
    }
}

#[derive(Default, Clone, serde::Serialize)]
struct Run {
    tokens: usize,
    ended: bool,
    valid: bool,
    gen_s: f64,
    forward_s: f64,
    mask_s: f64,
    error: Option<String>,
    #[serde(skip)]
    bytes: Vec<u8>,
}

/// Samples after `prompt` (already in `base`'s cache) under `guide`.
fn generate(
    base: &CausalLm,
    prompt_logits: &[f32],
    mut guide: Guide,
    vocab: &TokenVocab,
    args: &Args,
    seed: u64,
) -> Run {
    let mut lm = base.clone();
    let mut rng = seeded_rng(seed);
    let mut mask = TokenSet::new(vocab.len());
    let mut run = Run::default();
    let mut logits = prompt_logits.to_vec();
    let mut out: Vec<TokenId> = Vec::new();
    let t0 = Instant::now();
    let result: Result<()> = (|| {
        while out.len() < args.max_tokens {
            let scaled: Vec<f32> = logits.iter().map(|l| l / args.temperature).collect();
            let tm = Instant::now();
            let logp = if guide.fill_mask(&mut mask)? {
                run.mask_s += tm.elapsed().as_secs_f64();
                masked_log_softmax(&scaled, &mask).context("the grammar allows no token")?
            } else {
                log_softmax(&scaled)
            };
            let t = sample_log(&mut rng, &logp)? as TokenId;
            let ta = Instant::now();
            guide.advance(t, vocab.eos())?;
            run.mask_s += ta.elapsed().as_secs_f64();
            if t == vocab.eos() {
                run.ended = true;
                return Ok(());
            }
            out.push(t);
            let tf = Instant::now();
            logits = lm.prefill(&[t])?.row(0).to_vec();
            run.forward_s += tf.elapsed().as_secs_f64();
        }
        Ok(())
    })();
    run.gen_s = t0.elapsed().as_secs_f64();
    run.tokens = out.len() + usize::from(run.ended);
    run.error = result.err().map(|e| e.to_string());
    run.bytes = vocab.decode(&out);
    run
}

fn zap_grammar_from_schema(schema: &serde_json::Value) -> Result<Grammar> {
    let g = compile_json_schema(schema, &JsonSchemaOptions::default())?;
    Ok(simplify(&g, &SimplifyConfig::default())?.grammar)
}

fn zap_grammar_from_gbnf(text: &str) -> Result<Grammar> {
    let g = parse_gbnf(text)?.grammar;
    Ok(simplify(&g, &SimplifyConfig::default())?.grammar)
}

/// Whether a complete output is valid.
type Check = Box<dyn Fn(&[u8]) -> bool>;

struct Task {
    suite: &'static str,
    name: String,
    prompt: Vec<TokenId>,
    zap: Result<Grammar, String>,
    llg: TopLevelGrammar,
    /// Validity of an output (complete, EOS-terminated).
    check: Check,
}

#[derive(Default, serde::Serialize)]
struct Agg {
    outputs: usize,
    compile_failures: usize,
    errors: usize,
    tokens: usize,
    ended: usize,
    valid: usize,
    gen_s: f64,
    forward_s: f64,
    mask_s: f64,
    compile_s: f64,
}

impl Agg {
    fn add(&mut self, r: &Run) {
        self.outputs += 1;
        self.tokens += r.tokens;
        self.ended += usize::from(r.ended);
        self.valid += usize::from(r.valid);
        self.errors += usize::from(r.error.is_some());
        self.gen_s += r.gen_s;
        self.forward_s += r.forward_s;
        self.mask_s += r.mask_s;
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.out)?;
    let m = SmolLm2::load(GgufWeights::default(), 8192)?;
    let vocab = m.vocab.clone();
    let engine = Engine::new(vocab.clone());
    let env = tok_env(&vocab);
    let mut factory = ParserFactory::new_simple(&env)?;
    factory.quiet();

    let tasks = build_tasks(&args, &m)?;
    let bar = ProgressBar::new(tasks.len() as u64);
    bar.set_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} {msg} [{elapsed}<{eta}]",
    )?);
    let engines = ["unconstrained", "zapspec", "llguidance"];
    let mut aggs: Vec<Vec<Agg>> = (0..3)
        .map(|_| (0..3).map(|_| Agg::default()).collect())
        .collect();
    let suites = ["maskbench", "json.gbnf", "funql"];
    let mut rows = Vec::new();
    for (ti, task) in tasks.iter().enumerate() {
        bar.set_message(task.name.clone());
        let si = suites.iter().position(|s| *s == task.suite).unwrap_or(0);
        // One prefill of the prompt, shared by the three runs.
        let mut base = m.lm.clone();
        base.truncate(0);
        let logits = base.prefill(&task.prompt)?;
        let last = logits.row(logits.nrows() - 1).to_vec();
        let seed = args.seed.wrapping_mul(1_000_003).wrapping_add(ti as u64);
        for (ei, name) in engines.iter().enumerate() {
            let tc = Instant::now();
            let guide = match ei {
                0 => Ok(Guide::None),
                1 => match &task.zap {
                    Ok(g) => engine
                        .compile(g, EngineConfig::default())
                        .map(|c| Guide::Zap(Box::new(c.matcher())))
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.clone()),
                },
                _ => LlgMatcher::new(&factory, task.llg.clone())
                    .map(|mm| Guide::Llg(Box::new(mm)))
                    .map_err(|e| e.to_string()),
            };
            let compile_s = tc.elapsed().as_secs_f64();
            let agg = &mut aggs[si][ei];
            agg.compile_s += compile_s;
            let guide = match guide {
                Ok(g) => g,
                Err(e) => {
                    agg.compile_failures += 1;
                    rows.push(serde_json::json!({"suite": task.suite, "task": task.name, "engine": name, "compile_error": e}));
                    continue;
                }
            };
            let mut r = generate(&base, &last, guide, &vocab, &args, seed);
            r.valid = r.ended && r.error.is_none() && (task.check)(&r.bytes);
            agg.add(&r);
            rows.push(serde_json::json!({
                "suite": task.suite, "task": task.name, "engine": name, "compile_s": compile_s,
                "run": r, "output": String::from_utf8_lossy(&r.bytes),
            }));
        }
        bar.inc(1);
    }
    bar.finish();

    let mut t = Table::new(&[
        "suite",
        "engine",
        "outputs",
        "compile failures",
        "tokens",
        "tokens/s",
        "objects/s",
        "mask share of a step",
        "ended (EOS)",
        "valid",
        "errors",
        "compile (mean ms)",
    ]);
    for (si, suite) in suites.iter().enumerate() {
        for (ei, name) in engines.iter().enumerate() {
            let a = &aggs[si][ei];
            if a.outputs + a.compile_failures == 0 {
                continue;
            }
            t.row(&[
                suite.to_string(),
                name.to_string(),
                a.outputs.to_string(),
                a.compile_failures.to_string(),
                a.tokens.to_string(),
                format!("{:.1}", a.tokens as f64 / a.gen_s.max(1e-9)),
                format!("{:.3}", a.ended as f64 / a.gen_s.max(1e-9)),
                format!(
                    "{:.2}%",
                    100.0 * a.mask_s / (a.mask_s + a.forward_s).max(1e-12)
                ),
                format!("{}/{}", a.ended, a.outputs),
                format!("{}/{}", a.valid, a.outputs),
                a.errors.to_string(),
                format!(
                    "{:.2}",
                    1e3 * a.compile_s / (a.outputs + a.compile_failures).max(1) as f64
                ),
            ]);
        }
    }
    let md = format!(
        "# End-to-end constrained generation on SmolLM2-135M-Instruct (Q4_1, CPU)\n\n\
         Command: `e2e_throughput --schemas {} --max-tokens {} --temperature {} --seed {}` on {}.\n\
         Same prompts, seeds and generation loop for every engine; the prompt's prefill is not counted.\n\
         tokens/s = generated tokens (EOS included) / generation wall time (forward + mask + sampling);\n\
         objects/s = outputs that ended with EOS / generation wall time; valid = ended, and the output is\n\
         accepted by the `jsonschema` crate (MaskBench), is JSON (json.gbnf), or is in the FunQL grammar (reference recognizer).\n\n{}",
        args.schemas,
        args.max_tokens,
        args.temperature,
        args.seed,
        examples::host::cpu_name(),
        t.render()
    );
    std::fs::write(args.out.join("e2e_throughput.md"), &md)?;
    write_json(
        &args.out,
        "e2e_throughput",
        &serde_json::json!({"aggregates": aggs, "runs": rows}),
    )?;
    println!("{md}");
    Ok(())
}

fn build_tasks(args: &Args, m: &SmolLm2) -> Result<Vec<Task>> {
    let mut tasks = Vec::new();
    // 1. MaskBench.
    let files = examples::schema_tasks::shuffled_schema_files(&args.maskbench, args.seed)?;
    for f in files.iter().take(args.schemas) {
        let schema = examples::schema_tasks::read_schema(f)?;
        let user = examples::schema_tasks::schema_instruction(&schema, args.max_schema_bytes)?;
        let validator = jsonschema::validator_for(&schema).ok();
        tasks.push(Task {
            suite: "maskbench",
            name: name_of(f),
            prompt: m.prompt(None, &user)?,
            zap: zap_grammar_from_schema(&schema).map_err(|e| e.to_string()),
            llg: TopLevelGrammar::from_json_schema(compact_schema(&schema)),
            check: Box::new(move |b| {
                let Ok(v) = serde_json::from_slice::<serde_json::Value>(b) else {
                    return false;
                };
                validator.as_ref().is_some_and(|val| val.is_valid(&v))
            }),
        });
    }
    // 2. Generic JSON.
    let json_gbnf = std::fs::read_to_string("grammar-xform/grammars/json.gbnf")
        .context("run from the repository root")?;
    for (i, ask) in [
        "Describe a book you like as a JSON object.",
        "Give the weather forecast for three cities as JSON.",
        "List four planets with their order from the sun, as JSON.",
        "Make a JSON object describing a user profile with nested address.",
        "Return a JSON array of five prime numbers.",
    ]
    .iter()
    .enumerate()
    {
        tasks.push(Task {
            suite: "json.gbnf",
            name: format!("json-{i}"),
            prompt: m.prompt(None, &format!("{ask} Reply with JSON only."))?,
            zap: zap_grammar_from_gbnf(&json_gbnf).map_err(|e| e.to_string()),
            llg: TopLevelGrammar::from_json_schema(compact_schema(&serde_json::json!({}))),
            check: Box::new(|b| serde_json::from_slice::<serde_json::Value>(b).is_ok()),
        });
    }
    // 3. FunQL.
    let gbnf = std::fs::read_to_string("examples/data/funql.gbnf")?;
    let lark = std::fs::read_to_string("examples/data/funql.lark")?;
    let funql = zap_grammar_from_gbnf(&gbnf)?;
    let reference = Arc::new(Recognizer::new(&funql)?);
    let shots = "Translate questions about US geography into FunQL.\n\
        Q: what is the capital of texas?\nA: answer(capital_1(stateid('texas')))\n\
        Q: how many states border ohio?\nA: answer(count(state(next_to_2(stateid('ohio')))))\n\
        Q: what is the largest city in california?\nA: answer(largest(city(loc_2(stateid('california')))))\n";
    for (i, q) in [
        "what is the population of utah?",
        "which rivers run through colorado?",
        "what is the highest mountain in alaska?",
        "which states border texas?",
        "how long is the mississippi river?",
        "what is the smallest state by area?",
        "which cities in oregon have more than a million people?",
        "what states does the missouri river traverse?",
    ]
    .iter()
    .enumerate()
    {
        let r = reference.clone();
        tasks.push(Task {
            suite: "funql",
            name: format!("funql-{i}"),
            prompt: m.prompt(None, &format!("{shots}Q: {q}\nA only, no explanation."))?,
            zap: Ok(funql.clone()),
            llg: TopLevelGrammar::from_lark(lark.clone()),
            check: Box::new(move |b| r.recognizes(b)),
        });
    }
    Ok(tasks)
}

fn name_of(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
