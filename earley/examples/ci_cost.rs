//! Cost of one context-independent cache entry over o200k (a full
//! token-trie walk with a terminal's DFA), for a few terminals and states.
//!
//! `cargo run -p earley --profile release-fast --example ci_cost`
use std::sync::Arc;
use std::time::Instant;

use earley::{ByteDfa, VocabIndex};
use zapspec_core::vocab::TiktokenBpe;
use zapspec_core::TokenVocab;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let vocab = Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k)?);
    let t0 = Instant::now();
    let index = VocabIndex::new(vocab.clone());
    println!(
        "trie: {} nodes, {} tokens, built in {:.1} ms",
        index.trie().num_nodes(),
        index.trie().num_tokens(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    println!("| terminal | state after | CI µs | allowed | dependent |");
    println!("|---|---|---|---|---|");
    for (re, pre) in [
        (r#""(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*""#, &b"\""[..]),
        (r#""(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*""#, &b""[..]),
        (r#"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"#, &b""[..]),
        (r#"[ \t\n\r]*"#, &b""[..]),
        (r#"[a-z]"#, &b""[..]),
        (r#""(?:[^"\\\x00-\x1F]){0,255}""#, &b"\"ab"[..]),
    ] {
        let e = index.terminal_entry(re)?;
        let s = e.dfa.run(e.dfa.start(), pre);
        let t = Instant::now();
        let c = e.ci(s, index.trie(), &*vocab);
        let us = t.elapsed().as_secs_f64() * 1e6;
        println!(
            "| `{re}` | {:?} | {us:.0} | {} | {} |",
            String::from_utf8_lossy(pre),
            c.n_allowed,
            c.n_dependent()
        );
        let _ = ByteDfa::start;
    }
    Ok(())
}
