//! Memory of one shared `VocabIndex` over many distinct grammars, each
//! compiled, masked a few steps and dropped in turn (what a server, and
//! the MaskBench harness, does): the cache's byte account stays under
//! `IndexConfig::max_cache_bytes`, and the live heap (a counting global
//! allocator, this test binary only) grows by no more than the bound
//! allows, whatever the number of grammars run.
//!
//! One test in this file: the live heap is the whole process's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use zapspec_core::{Constraint, TokenSet, Vocabulary};
use zapspec_earley::{Engine, EngineConfig, IndexConfig, VocabIndex};
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions};
use zapspec_vocab::TokenVocab;

/// Live heap bytes, as requested of the system allocator.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to `System`; the counter is bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // SAFETY: as above.
        let q = unsafe { System.realloc(p, l, n) };
        if !q.is_null() {
            LIVE.fetch_add(n, Ordering::Relaxed);
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Every printable ASCII byte, some JSON punctuation pairs and short
/// words, then an empty EOS token.
fn vocab() -> Arc<TokenVocab> {
    let mut toks: Vec<Vec<u8>> = (0x20u8..0x7f).map(|b| vec![b]).collect();
    for w in [
        "\":", "\",", "{\"", "\"}", "ab", "key", "val", "_k", "12", "345", "true", "null", "xy",
        "zz", "\"a", "q\"", "abc", "k1", "k2", "-0", ".5",
    ] {
        toks.push(w.as_bytes().to_vec());
    }
    toks.push(Vec::new());
    let eos = toks.len() as u32 - 1;
    Arc::new(TokenVocab::from_tokens("memory", toks, &[eos], eos).expect("valid vocabulary"))
}

/// A schema whose keys and patterns are its own (grammar `i`'s terminals
/// are met by no other grammar), plus shapes every grammar shares.
fn schema(i: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            format!("key{i}"): {"type": "string", "pattern": format!("^a{i}[a-z]{{1,{}}}$", 2 + i % 9)},
            format!("k{}_{i}", i % 13): {"type": "integer"},
            "shared": {"type": "array", "items": {"type": "string", "maxLength": 3 + i % 5}},
            format!("e{i}"): {"enum": [format!("v{i}"), format!("w{}", i * 7)]}
        },
        "required": [format!("key{i}")],
        "additionalProperties": false
    })
}

/// Compiles grammar `i`, masks and advances up to `steps` tokens (the
/// first allowed non-EOS token each time), and drops it all.
fn run_one(engine: &Engine, i: usize, steps: usize) {
    let g = compile_json_schema(&schema(i), &JsonSchemaOptions::default()).expect("schema");
    let cg = engine
        .compile(&g, EngineConfig::default())
        .expect("grammar compiles");
    let mut m = cg.matcher();
    let n = engine.index().vocab().len();
    let eos = engine.index().vocab().eos();
    let mut mask = TokenSet::new(n);
    for _ in 0..steps {
        m.fill_mask(&mut mask);
        let Some(t) = (0..n as u32).find(|&t| t != eos && mask.contains(t)) else {
            break;
        };
        m.advance(t).expect("a token of the mask advances");
    }
}

/// The index keeps no more than its bound across many distinct grammars:
/// its byte account stays under `max_cache_bytes` (plus the one grammar
/// alive, pinned); the live heap the account does not count (the
/// vocabulary, its trie and slices) stays flat; and the live heap after
/// the last grammar is dropped exceeds the live heap after the warm-up by
/// no more than the bound.
#[test]
fn many_grammars_stay_under_the_bound() {
    const MAX: usize = 256 << 10;
    const WARM: usize = 50;
    const RUNS: usize = 1500;
    let index = VocabIndex::with_config(
        vocab(),
        IndexConfig {
            max_cache_bytes: MAX,
            ..IndexConfig::default()
        },
    )
    .expect("index");
    let engine = Engine::with_index(index.clone());
    let (mut warm, mut warm_uncounted) = (0, 0);
    let mut most = 0;
    for i in 0..RUNS {
        run_one(&engine, i, 24);
        most = most.max(index.cache_bytes());
        if i + 1 == WARM {
            warm = live();
            let st = index.cache_stats();
            warm_uncounted = warm.saturating_sub(st.cache_bytes + st.dead_place_bytes);
        }
    }
    let stats = index.cache_stats();
    let grown = live().saturating_sub(warm);
    // what the account does not see: the vocabulary, the trie, the
    // slices, and nothing that grows with the grammars run
    // (the dead places of the ring hold dropped terminals' allocations
    // until it compacts: a sawtooth, taken out at both ends)
    let uncounted = live().saturating_sub(stats.cache_bytes + stats.dead_place_bytes);
    assert_eq!(stats.cache_bytes, index.cache_bytes());
    assert!(
        most <= MAX + MAX / 4,
        "cache account peaked at {most} bytes, bound {MAX}: {stats:?}"
    );
    assert!(
        uncounted <= warm_uncounted + MAX / 8,
        "the heap the cache does not count grew from {warm_uncounted} to {uncounted} bytes \
         over {} grammars: {stats:?}",
        RUNS - WARM
    );
    assert!(
        grown <= MAX,
        "live heap grew by {grown} bytes over {} grammars after the warm-up \
         (bound {MAX}; account {} bytes): {stats:?}",
        RUNS - WARM,
        stats.cache_bytes
    );
}
