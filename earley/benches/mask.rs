//! Mask computation on `grammar-xform/grammars/json.gbnf` over o200k: pruned vs unpruned and
//! the caches on/off, side by side (criterion). Each benchmark replays the
//! same tokenized document: per iteration, one `fill_mask` at every step
//! (the engine advances outside the timer via a precomputed matcher list).
//!
//! `cargo bench -p zapspec-earley --bench mask`

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use zapspec_core::{Constraint, TokenSet, Vocabulary};
use zapspec_earley::{Engine, EngineConfig};
use zapspec_grammar::Grammar;
use zapspec_vocab::TiktokenBpe;
use zapspec_vocab::TokenVocab;

/// The project's JSON grammar (RFC 8259, llama.cpp style).
const JSON_GBNF: &str = include_str!("../../grammar-xform/grammars/json.gbnf");

const DOC: &str = r#"{"name": "Formatron", "version": [1, 2, 3], "pruning": true, "nested": {"a": {"b": {"c": "deep \"quoted\" text"}}}, "score": -12.5e3, "tags": ["x", "y", "z"]}"#;

fn bench(c: &mut Criterion) {
    let vocab = Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k).expect("o200k"));
    let grammar = Grammar::from_gbnf(JSON_GBNF).expect("json grammar");
    let toks = vocab.encode(DOC).expect("encode");
    let d = EngineConfig::default();
    let configs = [
        ("full", d),
        (
            "no_pruning",
            EngineConfig {
                pruning: false,
                ..d
            },
        ),
        (
            "no_state_cache",
            EngineConfig {
                state_cache: false,
                ..d
            },
        ),
        (
            "no_pruning_no_state_cache",
            EngineConfig {
                pruning: false,
                state_cache: false,
                ..d
            },
        ),
        (
            "no_ci_cache",
            EngineConfig {
                ci_cache: false,
                state_cache: false,
                ..d
            },
        ),
    ];
    let mut group = c.benchmark_group("json_o200k_mask_per_token");
    group.sample_size(10);
    for (name, cfg) in configs {
        // Warm the shared context-independent cache (steady state).
        let engine = Engine::new(vocab.clone());
        let compiled = engine.compile(&grammar, cfg).expect("compile");
        let mut states = Vec::new();
        let mut m = compiled.matcher();
        for &t in &toks {
            states.push(m.clone());
            m.advance(t).expect("document is valid");
        }
        let mut mask = TokenSet::new(vocab.len());
        for s in states.iter_mut() {
            s.fill_mask(&mut mask);
        }
        group.bench_with_input(BenchmarkId::from_parameter(name), &states, |b, states| {
            b.iter(|| {
                let mut n = 0;
                for s in states.iter() {
                    let mut s = s.clone();
                    s.fill_mask(&mut mask);
                    n += mask.contains(vocab.eos()) as usize;
                }
                n
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
