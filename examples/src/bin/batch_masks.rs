//! Batch token masks for serving: the masks of a batch of sequences of one
//! JSON Schema grammar over a real tokenizer, computed by
//! `zapspec_earley::fill_masks` on a rayon pool of 1 and of 2 threads,
//! and called from the main thread (the global pool) with the default
//! hand-off (`BatchConfig::handoff_above`: the caller fills masks while
//! the rest of the batch is projected to take under 200 µs, then hands it
//! to the pool) and with every
//! mask sent to the pool, against a sequential `fill_mask` loop on the
//! calling thread.
//!
//! The batch (64 sequences by default) replays valid instances of a fixed
//! order schema (generated with `--seed`, tokenized with the vocabulary):
//! sequence `i` starts at a random depth of its instance, and every step
//! advances each sequence by its next token and then masks the whole
//! batch — one decoding step of a server. A sequence that reaches the end
//! of its instance starts the next instance from the beginning, so the
//! batch stays at mixed depths. Each mode runs on its own compiled grammar (its own pruned-state cache)
//! over one shared vocabulary index, after an untimed warm-up pass that
//! fills the shared context-independent entries; the modes take turns
//! within every step (rotating order), so they see the same machine load,
//! and their masks are checked equal. Two settings: the default engine
//! (pruned-state cache on: most masks are cache hits after the first
//! visit of a state), the cache off (every mask computed from the shared
//! context-independent entries, the work a cold or highly varied batch
//! does), and no mask caches at all (every mask walks the whole token trie
//! with the parser: milliseconds a mask, the case where threads pay most;
//! `--walk-steps` steps).
//!
//! The sample is the wall time of one batch mask call (µs); the report
//! gives its distribution per mode and setting and the load average of
//! the machine before and after, since other processes share the cores.
//!
//! ```text
//! cargo run -p examples --profile release-fast --bin batch_masks -- --seed 13
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use examples::maskstats::{fmt_us, Summary};
use examples::report::{write_json, MarkdownTable};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_earley::{
    fill_masks, fill_masks_with, BatchConfig, CompiledGrammar, EarleyMatcher, Engine, EngineConfig,
};
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions};
use zapspec_vocab::{TiktokenBpe, TokenVocab};

#[derive(Parser, Debug)]
#[command(about = "Batch token masks (fill_masks) on 1 and 2 threads vs a sequential loop")]
struct Args {
    /// Seed of the instances and of the starting depths.
    #[arg(long, default_value_t = 13)]
    seed: u64,
    /// Sequences in the batch.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Timed decoding steps (one batch mask per mode and setting each).
    #[arg(long, default_value_t = 200)]
    steps: usize,
    /// Timed steps of the setting without mask caches (each mask walks
    /// the token trie).
    #[arg(long, default_value_t = 40)]
    walk_steps: usize,
    /// Tokenizer: o200k or cl100k.
    #[arg(long, default_value = "o200k")]
    vocab: String,
    /// Directory of batch_masks.md and batch_masks.json.
    #[arg(long, default_value = "examples/results/batch-masks")]
    out: PathBuf,
}

/// The schema of the instances: an order with a customer, line items, a
/// status enum and free text.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "customer": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "email": {"type": "string"},
                    "vip": {"type": "boolean"}
                },
                "required": ["name", "email", "vip"],
                "additionalProperties": false
            },
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "sku": {"type": "string"},
                        "qty": {"type": "integer"},
                        "price": {"type": "number"}
                    },
                    "required": ["sku", "qty", "price"],
                    "additionalProperties": false
                }
            },
            "status": {"enum": ["pending", "shipped", "delivered", "returned"]},
            "notes": {"type": "string"}
        },
        "required": ["id", "customer", "items", "status", "notes"],
        "additionalProperties": false
    })
}

const WORDS: [&str; 16] = [
    "Ada",
    "Lovelace",
    "Grace",
    "Hopper",
    "café",
    "naïve",
    "order",
    "gift",
    "wrap",
    "please",
    "fragile",
    "leave at door",
    "ASAP",
    "déjà vu",
    "x-42",
    "™",
];

/// A valid instance of [`schema`], compact JSON.
fn instance(rng: &mut ChaCha8Rng) -> String {
    let mut words = |n: usize| {
        (0..n)
            .map(|_| WORDS[rng.random_range(0..WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let name = words(2);
    let email = format!("{}@example.com", words(1).replace(' ', "."));
    let notes = words(6);
    let n_items = rng.random_range(1..5);
    let items: Vec<Value> = (0..n_items)
        .map(|_| {
            json!({
                "sku": format!("SKU-{:05}", rng.random_range(0..100_000)),
                "qty": rng.random_range(1..20),
                "price": (rng.random_range(100..100_000) as f64) / 100.0,
            })
        })
        .collect();
    let status = ["pending", "shipped", "delivered", "returned"][rng.random_range(0..4)];
    let v = json!({
        "id": rng.random_range(1..10_000_000),
        "customer": {"name": name, "email": email, "vip": rng.random_bool(0.3)},
        "items": items,
        "status": status,
        "notes": notes,
    });
    v.to_string()
}

/// One sequence of the batch: which instance it replays and how far.
#[derive(Clone, Copy)]
struct Cursor {
    instance: usize,
    pos: usize,
}

/// The three ways of filling the masks of a batch.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Sequential,
    /// `fill_masks` called from the main thread (the global pool), with
    /// the default hand-off (`handoff`) or every mask sent to the pool.
    Caller {
        handoff: bool,
    },
    /// `fill_masks` inside `install` on a pool of this many threads.
    Threads(usize),
}

impl Mode {
    fn name(self) -> String {
        match self {
            Mode::Sequential => "sequential loop".into(),
            Mode::Caller { handoff: true } => "fill_masks from the caller (default)".into(),
            Mode::Caller { handoff: false } => "fill_masks from the caller, all to the pool".into(),
            Mode::Threads(1) => "fill_masks, 1 thread".into(),
            Mode::Threads(k) => format!("fill_masks, {k} threads"),
        }
    }
}

/// One mode's state: its compiled grammar, matchers and masks.
struct Lane {
    mode: Mode,
    pool: Option<rayon::ThreadPool>,
    matchers: Vec<EarleyMatcher>,
    masks: Vec<TokenSet>,
    samples_us: Vec<f64>,
}

impl Lane {
    fn fill(&mut self) -> Result<f64> {
        let t0 = Instant::now();
        match (&self.pool, self.mode) {
            (Some(pool), _) => pool.install(|| fill_masks(&mut self.matchers, &mut self.masks))?,
            (None, Mode::Caller { handoff }) => {
                let cfg = if handoff {
                    BatchConfig::default()
                } else {
                    BatchConfig {
                        handoff_above: std::time::Duration::ZERO,
                    }
                };
                fill_masks_with(&mut self.matchers, &mut self.masks, &cfg)?
            }
            (None, _) => {
                for (m, s) in self.matchers.iter_mut().zip(self.masks.iter_mut()) {
                    m.fill_mask(s);
                }
            }
        }
        Ok(t0.elapsed().as_secs_f64() * 1e6)
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "n/a".into())
}

/// Advances every cursor (and the matchers of every lane) by one token;
/// a cursor at the end of its instance restarts on the next one.
fn step(
    cursors: &mut [Cursor],
    instances: &[Vec<TokenId>],
    lanes: &mut [&mut Vec<EarleyMatcher>],
) -> Result<()> {
    for (i, c) in cursors.iter_mut().enumerate() {
        if c.pos == instances[c.instance].len() {
            c.instance = (c.instance + 1) % instances.len();
            c.pos = 0;
            for l in lanes.iter_mut() {
                let n = l[i].num_tokens();
                l[i].rollback(n)?;
            }
        }
        let t = instances[c.instance][c.pos];
        for l in lanes.iter_mut() {
            l[i].advance(t)
                .with_context(|| format!("instance {} token {}", c.instance, c.pos))?;
        }
        c.pos += 1;
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    let load_before = loadavg();
    let bpe = match args.vocab.as_str() {
        "o200k" => TiktokenBpe::O200k,
        "cl100k" => TiktokenBpe::Cl100k,
        v => bail!("unknown vocabulary {v} (o200k or cl100k)"),
    };
    let vocab = Arc::new(TokenVocab::tiktoken(bpe)?);
    let engine = Engine::new(vocab.clone());
    let grammar = compile_json_schema(&schema(), &JsonSchemaOptions::default())?;

    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let n_instances = args.batch * 2;
    let instances: Vec<Vec<TokenId>> = (0..n_instances)
        .map(|_| vocab.encode(&instance(&mut rng)))
        .collect::<Result<_, _>>()?;
    let mean_len = instances.iter().map(Vec::len).sum::<usize>() as f64 / instances.len() as f64;
    let start: Vec<Cursor> = (0..args.batch)
        .map(|i| Cursor {
            instance: i,
            pos: rng.random_range(0..instances[i].len()),
        })
        .collect();

    let settings = [
        ("state cache on (default)", EngineConfig::default()),
        (
            "state cache off",
            EngineConfig {
                state_cache: false,
                ..EngineConfig::default()
            },
        ),
        (
            "no mask caches (trie walk per mask)",
            EngineConfig {
                state_cache: false,
                ci_cache: false,
                ..EngineConfig::default()
            },
        ),
    ];
    let modes = [
        Mode::Sequential,
        Mode::Caller { handoff: true },
        Mode::Caller { handoff: false },
        Mode::Threads(1),
        Mode::Threads(2),
    ];
    let mut table = MarkdownTable::new(&[
        "setting",
        "mode",
        "p50",
        "p90",
        "p99",
        "max",
        "mean",
        "mean / sequential",
    ]);
    let mut results = Vec::new();
    let (mut cores, mut cores_json) = (Vec::new(), Vec::new());
    for (setting, cfg) in settings {
        // Without the context-independent cache every mask walks the whole
        // token trie (milliseconds): fewer steps, and nothing to warm up.
        let steps = if cfg.ci_cache {
            args.steps
        } else {
            args.walk_steps
        };
        let compile = || -> Result<Arc<CompiledGrammar>> { Ok(engine.compile(&grammar, cfg)?) };
        let position = |cg: &Arc<CompiledGrammar>| -> Result<Vec<EarleyMatcher>> {
            start
                .iter()
                .map(|c| {
                    let mut m = cg.matcher();
                    for &t in &instances[c.instance][..c.pos] {
                        m.advance(t)?;
                    }
                    Ok(m)
                })
                .collect()
        };
        // Untimed warm-up over the whole schedule: fills the shared
        // context-independent entries (and checks the instances parse).
        {
            let cg = compile()?;
            let mut ms = position(&cg)?;
            let mut cursors = start.clone();
            for _ in 0..if cfg.ci_cache { steps } else { 0 } {
                step(&mut cursors, &instances, &mut [&mut ms])?;
                for m in ms.iter_mut() {
                    m.mask();
                }
            }
        }
        let mut lanes: Vec<Lane> = Vec::new();
        for mode in modes {
            let cg = compile()?;
            let pool = match mode {
                Mode::Threads(k) => Some(rayon::ThreadPoolBuilder::new().num_threads(k).build()?),
                Mode::Sequential | Mode::Caller { .. } => None,
            };
            lanes.push(Lane {
                mode,
                pool,
                matchers: position(&cg)?,
                masks: vec![TokenSet::new(vocab.len()); args.batch],
                samples_us: Vec::with_capacity(steps),
            });
        }
        let mut cursors = start.clone();
        let (wall0, cpu0) = (Instant::now(), cpu_time::ProcessTime::now());
        for s in 0..steps {
            {
                let mut ms: Vec<&mut Vec<EarleyMatcher>> =
                    lanes.iter_mut().map(|l| &mut l.matchers).collect();
                step(&mut cursors, &instances, &mut ms)?;
            }
            for k in 0..lanes.len() {
                let l = &mut lanes[(s + k) % modes.len()];
                let us = l.fill()?;
                l.samples_us.push(us);
            }
            for l in &lanes[1..] {
                if l.masks != lanes[0].masks {
                    bail!(
                        "step {s}: {} masks differ from the sequential loop's",
                        l.mode.name()
                    );
                }
            }
        }
        // Process CPU time over wall time of the timed steps: the cores
        // this process actually got (advances, masks and checks included).
        let (wall, cpu) = (wall0.elapsed().as_secs_f64(), cpu0.elapsed().as_secs_f64());
        cores.push(format!(
            "{setting}: {cpu:.1} s CPU over {wall:.1} s wall, {:.2} cores",
            cpu / wall
        ));
        cores_json.push(json!({"setting": setting, "cpu_s": cpu, "wall_s": wall}));
        let base = Summary::of(&lanes[0].samples_us).mean;
        for l in &lanes {
            let sm = Summary::of(&l.samples_us);
            table.row(&[
                setting.to_string(),
                l.mode.name(),
                fmt_us(sm.p50),
                fmt_us(sm.p90),
                fmt_us(sm.p99),
                fmt_us(sm.max),
                fmt_us(sm.mean),
                format!("{:.2}", sm.mean / base),
            ]);
            results.push(json!({
                "setting": setting,
                "mode": l.mode.name(),
                "batch_us": {
                    "count": sm.count, "p50": sm.p50, "p90": sm.p90, "p99": sm.p99,
                    "max": sm.max, "mean": sm.mean,
                },
                "mean_over_sequential": sm.mean / base,
                "per_sequence_mean_us": sm.mean / args.batch as f64,
            }));
        }
    }
    let load_after = loadavg();
    let cpu = examples::host::cpu_name();
    let cmd = format!(
        "cargo run -p examples --profile release-fast --bin batch_masks -- --seed {} --batch {} --steps {} --walk-steps {} --vocab {}",
        args.seed, args.batch, args.steps, args.walk_steps, args.vocab
    );
    let md = format!(
        "# Batch masks: `fill_masks` on 1 and 2 threads vs a sequential loop\n\n\
         `{cmd}`\n\n\
         {batch} sequences of one JSON Schema grammar (an order: customer, line items, \
         status enum, notes) over {vocab} ({v} tokens), replaying {n} seeded valid instances \
         (mean {mean_len:.0} tokens) from mixed depths; per step every sequence advances one \
         token, then each mode masks the whole batch (its own compiled grammar, modes in \
         rotating order, masks checked equal). Sample: wall time of one batch mask call, \
         {steps} steps per mode and setting ({walk_steps} without mask caches).\n\n\
         Machine: {cpu}; load average (1/5/15 min) {load_before} before, {load_after} after \
         (other jobs share the cores). Cores this process got during the timed steps \
         (process CPU time / wall time): {cores}.\n\n{table}",
        batch = args.batch,
        vocab = args.vocab,
        v = vocab.len(),
        n = n_instances,
        steps = args.steps,
        walk_steps = args.walk_steps,
        table = table.render(),
        cores = cores.join("; "),
    );
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("batch_masks.md"), &md)?;
    let path = write_json(
        &args.out,
        "batch_masks",
        &json!({
            "command": cmd,
            "seed": args.seed,
            "batch": args.batch,
            "steps": args.steps,
            "walk_steps": args.walk_steps,
            "vocab": args.vocab,
            "vocab_len": vocab.len(),
            "instances": n_instances,
            "mean_instance_tokens": mean_len,
            "cpu": cpu,
            "loadavg_before": load_before,
            "loadavg_after": load_after,
            "process_time": cores_json,
            "results": results,
        }),
    )?;
    print!("{md}");
    eprintln!("wrote {}", path.display());
    Ok(())
}
