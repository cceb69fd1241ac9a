//! Thread-safety soak: compiled grammars and the shared
//! per-vocabulary cache used from 8 rayon threads at once give exactly the
//! results of a sequential run, with no deadlock, and memory stays bounded.
//!
//! Each sequence is a seeded random walk: mask, hash the mask, sample an
//! allowed token (EOS only sometimes), advance; now and then roll back a
//! few tokens or fork and drop. Its digest (every mask's hash and every
//! token) is compared between a sequential run and a parallel run, each
//! on a fresh engine (so neither run's caches are warmed by the other).
//!
//! - `soak_short` (default `cargo test`): the byte vocabulary, the shipped
//!   GBNF grammars, a few built-in ones and up to 8 MaskBench schemas,
//!   1,000 sequences — about a second.
//! - `soak_full` (`#[ignore]`): o200k, 50 grammars (48 MaskBench schemas
//!   compiled by the JSON Schema compiler, when `MASKBENCH_DIR` or
//!   `../shared/data/maskbench` exists, plus the shipped GBNF grammars;
//!   built-in grammars fill in otherwise), 10,000 sequences. Run it in
//!   release:
//!
//! ```sh
//! cargo test --release -p zapspec-earley --test soak -- --ignored --nocapture
//! ```
//!
//! Both print the wall times, the peak resident memory
//! ([`peak_rss_kib`]), the shared cache's size and the largest Earley set
//! seen (what `EngineConfig::max_set_items` bounds).

use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use rustc_hash::FxHasher;
use zapspec_core::{Constraint, TokenSet, Vocabulary};
use zapspec_earley::{
    CacheStats, CompiledGrammar, Counters, EarleyError, EarleyMatcher, Engine, EngineConfig,
    IndexConfig, VocabIndex,
};
use zapspec_grammar::Grammar;
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions};
use zapspec_testkit::hostile::peak_rss_kib;
use zapspec_vocab::{TiktokenBpe, TokenVocab};

/// The thread-safety bounds of the public types a server shares or moves
/// between threads (the library checks the engine's own in `batch`).
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Engine>();
    send_sync::<VocabIndex>();
    send_sync::<CompiledGrammar>();
    send_sync::<Arc<CompiledGrammar>>();
    send_sync::<EarleyMatcher>();
    send_sync::<EngineConfig>();
    send_sync::<IndexConfig>();
    send_sync::<EarleyError>();
    send_sync::<Counters>();
    send_sync::<CacheStats>();
    send_sync::<Grammar>();
    send_sync::<TokenVocab>();
};

const EXPR_GBNF: &str = r#"
root ::= expr
expr ::= expr ("+" | "-") term | term
term ::= term ("*" | "/") atom | atom
atom ::= [0-9]+ | "(" expr ")" | "-" atom
"#;

const LIST_GBNF: &str = r#"
root ::= "[" ws (item (ws "," ws item)*)? ws "]"
item ::= "\"" [a-z ]{0,12} "\"" | [0-9]{1,6} | "true" | "false" | root
ws   ::= " "?
"#;

const KV_GBNF: &str = r#"
root ::= line+
line ::= key "=" value "\n"
key  ::= [a-z_]+
value ::= [^\n]*
"#;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn maskbench_dir() -> Option<PathBuf> {
    let d = std::env::var_os("MASKBENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared/data/maskbench"));
    d.is_dir().then_some(d)
}

/// Named grammars: the shipped GBNF files, then `schemas` MaskBench
/// schemas (spread over the sorted file list; ones the compilers refuse
/// are skipped), then built-in grammars up to `total`.
fn grammars(schemas: usize, total: usize) -> Vec<(String, Grammar)> {
    let mut out = Vec::new();
    let mut gbnf: Vec<PathBuf> = ["grammar-xform/grammars", "examples/data"]
        .iter()
        .filter_map(|d| std::fs::read_dir(workspace().join(d)).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gbnf"))
        .collect();
    gbnf.sort();
    for p in gbnf {
        let src = std::fs::read_to_string(&p).expect("read gbnf");
        let g = Grammar::from_gbnf(&src).expect("shipped gbnf parses");
        out.push((p.file_name().unwrap().to_string_lossy().into_owned(), g));
    }
    match maskbench_dir() {
        None => println!("soak: no MaskBench directory (MASKBENCH_DIR or ../shared/data/maskbench): JSON schemas skipped"),
        Some(dir) => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .expect("maskbench dir")
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            files.sort();
            let stride = (files.len() / schemas.max(1)).max(1);
            let mut taken = 0;
            'outer: for start in 0..stride {
                for p in files.iter().skip(start).step_by(stride) {
                    if taken == schemas {
                        break 'outer;
                    }
                    let Ok(text) = std::fs::read_to_string(p) else {
                        continue;
                    };
                    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
                        continue;
                    };
                    let schema = v.get("schema").unwrap_or(&v);
                    if let Ok(g) = compile_json_schema(schema, &JsonSchemaOptions::default()) {
                        if out.iter().any(|(n, _)| n == &p.display().to_string()) {
                            continue;
                        }
                        out.push((p.file_name().unwrap().to_string_lossy().into_owned(), g));
                        taken += 1;
                    }
                }
            }
        }
    }
    let builtin = [
        ("expr", EXPR_GBNF),
        ("list", LIST_GBNF),
        ("kv", KV_GBNF),
        ("json-char", JSON_CHAR_GBNF),
    ];
    let mut i = 0;
    while out.len() < total {
        let (n, src) = builtin[i % builtin.len()];
        out.push((
            format!("{n}#{}", i / builtin.len()),
            Grammar::from_gbnf(src).unwrap(),
        ));
        i += 1;
    }
    out
}

const JSON_CHAR_GBNF: &str = r#"
root   ::= value
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ( member ( "," member )* )? "}"
member ::= string ":" value
array  ::= "[" ( value ( "," value )* )? "]"
string ::= "\"" [a-z0-9 ]* "\""
number ::= "-"? [0-9]+
"#;

fn mask_hash(m: &TokenSet) -> u64 {
    let mut h = FxHasher::default();
    for &w in m.words() {
        h.write_u64(w);
    }
    h.finish()
}

/// One seeded random walk over `g`; returns its digest (every mask hash,
/// every token, every rollback) and the number of masks taken.
fn walk(g: &Arc<CompiledGrammar>, seed: u64, max_steps: usize) -> (u64, usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut m = g.matcher();
    let eos = Constraint::eos(&m);
    let mut h = FxHasher::default();
    let mut masks = 0;
    let mut ids = Vec::new();
    for _ in 0..max_steps {
        let mask = m.mask();
        masks += 1;
        h.write_u64(mask_hash(&mask));
        ids.clear();
        ids.extend(mask.iter().filter(|&t| t != eos));
        let end = mask.contains(eos) && (ids.is_empty() || rng.random_range(0..8) == 0);
        if end {
            m.advance(eos).expect("EOS in the mask is accepted");
            h.write_u32(eos);
            break;
        }
        if ids.is_empty() {
            break;
        }
        let t = ids[rng.random_range(0..ids.len())];
        m.advance(t).expect("a token of the mask is accepted");
        h.write_u32(t);
        match rng.random_range(0..16) {
            0 if m.num_tokens() >= 2 => {
                let n = rng.random_range(1..=m.num_tokens().min(3));
                m.rollback(n).unwrap();
                h.write_u64(0xdead_0000 + n as u64);
            }
            1 => {
                // A fork advanced on its own and dropped: the original's
                // mask must not change.
                let mut f = m.fork();
                let fm = f.mask();
                if let Some(t) = fm.iter().find(|&t| t != eos) {
                    f.advance(t).unwrap();
                    let _ = f.mask();
                }
                h.write_u64(mask_hash(&fm));
            }
            _ => {}
        }
    }
    (h.finish(), masks)
}

/// A fresh engine over `vocab` with every grammar compiled.
fn compile_all(
    vocab: &Arc<TokenVocab>,
    grammars: &[(String, Grammar)],
) -> (Engine, Vec<Arc<CompiledGrammar>>) {
    let engine = Engine::new(vocab.clone());
    let compiled = grammars
        .iter()
        .map(|(n, g)| {
            engine
                .compile(g, EngineConfig::default())
                .unwrap_or_else(|e| panic!("{n}: {e}"))
        })
        .collect();
    (engine, compiled)
}

struct Run {
    digests: Vec<u64>,
    masks: usize,
    wall: Duration,
    cache: CacheStats,
    peak_set: usize,
}

fn run(
    vocab: &Arc<TokenVocab>,
    grammars: &[(String, Grammar)],
    sequences: usize,
    max_steps: usize,
    threads: Option<usize>,
) -> Run {
    let t = Instant::now();
    let (engine, compiled) = compile_all(vocab, grammars);
    let one = |i: usize| walk(&compiled[i % compiled.len()], i as u64, max_steps);
    let results: Vec<(u64, usize)> = match threads {
        None => (0..sequences).map(one).collect(),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
            .install(|| (0..sequences).into_par_iter().map(one).collect()),
    };
    Run {
        digests: results.iter().map(|r| r.0).collect(),
        masks: results.iter().map(|r| r.1).sum(),
        wall: t.elapsed(),
        cache: engine.index().cache_stats(),
        peak_set: compiled
            .iter()
            .map(|c| c.counters().peak_set_items)
            .max()
            .unwrap_or(0),
    }
}

/// Runs `f` on another thread and fails when it does not finish within
/// `bound` (a deadlock shows as a timeout, not a hung test run).
fn within<T: Send + 'static>(bound: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(bound) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("soak did not finish in {bound:?}: deadlock?")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("soak thread panicked"),
    }
}

fn soak(
    label: &str,
    vocab: Arc<TokenVocab>,
    grammars: Vec<(String, Grammar)>,
    sequences: usize,
    max_steps: usize,
    threads: usize,
) {
    let names = grammars.len();
    let seq = run(&vocab, &grammars, sequences, max_steps, None);
    let par = run(&vocab, &grammars, sequences, max_steps, Some(threads));
    let same = seq.digests == par.digests;
    let differ = seq
        .digests
        .iter()
        .zip(&par.digests)
        .filter(|(a, b)| a != b)
        .count();
    println!(
        "soak {label}: {sequences} sequences over {names} grammars, vocabulary {} tokens, {} masks; \
         sequential {:.2} s, {threads} threads {:.2} s; identical: {} ({differ} differ); \
         shared cache after the parallel run: {} terminals, {} entries, {:.1} MiB (bound {} MiB, {} evictions); \
         largest Earley set {} items; peak RSS {} KiB",
        vocab.len(),
        par.masks,
        seq.wall.as_secs_f64(),
        par.wall.as_secs_f64(),
        if same { "Y" } else { "N" },
        par.cache.terminals,
        par.cache.ci_entries,
        par.cache.ci_bytes as f64 / (1 << 20) as f64,
        IndexConfig::default().max_cache_bytes >> 20,
        par.cache.evictions,
        seq.peak_set.max(par.peak_set),
        peak_rss_kib().map_or("?".into(), |k| k.to_string()),
    );
    assert_eq!(seq.masks, par.masks);
    assert!(same, "{differ} of {sequences} sequences differ");
    assert!(seq.peak_set.max(par.peak_set) < EngineConfig::DEFAULT_MAX_SET_ITEMS);
}

#[test]
fn soak_short() {
    within(Duration::from_secs(300), || {
        let mut g = grammars(8, 14);
        g.truncate(14);
        soak("short", Arc::new(TokenVocab::bytes()), g, 1000, 48, 8)
    });
}

#[test]
#[ignore = "minutes: o200k, 50 grammars, 10,000 sequences (run in release)"]
fn soak_full() {
    within(Duration::from_secs(3600), || {
        let vocab = Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k).expect("o200k"));
        let sequences = std::env::var("SOAK_SEQUENCES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10_000);
        soak("full", vocab, grammars(48, 50), sequences, 32, 8)
    });
}
