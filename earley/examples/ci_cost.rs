//! Cost of one cold context-independent cache entry over o200k, with and
//! without vocabulary slices ([`zapspec_earley::slicer`]), measured side by side:
//! the baseline walks the whole token trie with the terminal's DFA; the
//! sliced entry takes the precomputed slice set and walks only the tokens
//! outside it. Both entries are checked to be identical.
//!
//! `cargo run -p zapspec-earley --profile release-fast --example ci_cost`
use std::sync::Arc;
use std::time::Instant;

use zapspec_core::Vocabulary;
use zapspec_earley::{IndexConfig, VocabIndex};
use zapspec_vocab::TiktokenBpe;
use zapspec_vocab::TokenVocab;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let vocab = Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k)?);
    let t0 = Instant::now();
    let plain = VocabIndex::with_config(vocab.clone(), IndexConfig::plain())?;
    let t_plain = t0.elapsed();
    let t0 = Instant::now();
    let sliced = VocabIndex::new(vocab.clone());
    let t_sliced = t0.elapsed();
    println!(
        "trie: {} nodes, {} tokens; index built in {:.1} ms without slices, {:.1} ms with {} slices",
        plain.trie().num_nodes(),
        plain.trie().num_tokens(),
        t_plain.as_secs_f64() * 1e3,
        t_sliced.as_secs_f64() * 1e3,
        sliced.slices().len()
    );
    for s in sliced.slices() {
        println!(
            "slice `{}`: {} tokens inside, {} outside ({} trie nodes)",
            s.regex(),
            s.num_tokens(),
            s.rest().num_tokens(),
            s.rest().num_nodes()
        );
    }
    println!();
    println!("| terminal | state after | full walk µs | sliced µs | speed-up | allowed | dependent | identical |");
    println!("|---|---|---:|---:|---:|---:|---:|---|");
    for (re, pre) in [
        (
            r#""(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*""#,
            &b"\""[..],
        ),
        (
            r#""(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*""#,
            &b"\"ab\\u"[..],
        ),
        (
            r#""(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*""#,
            &b""[..],
        ),
        (
            r#"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"#,
            &b""[..],
        ),
        (r#"[ \t\n\r]*"#, &b""[..]),
        (r#"[a-z]"#, &b""[..]),
        (r#""(?:[^"\\\x00-\x1F]){0,255}""#, &b"\"ab"[..]),
        (r#""(?:[^"\\\x00-\x1F]){0,20}""#, &b"\"ab"[..]),
        (r#""(?:[^"\\\x00-\x1F]){3,50}""#, &b"\"ab"[..]),
    ] {
        let time = |index: &VocabIndex| -> Result<_, Box<dyn std::error::Error>> {
            let e = index.terminal_entry(re)?;
            let s = e.dfa().run(e.dfa().start(), pre);
            let t = Instant::now();
            let c = e.ci(s, index).clone();
            Ok((t.elapsed().as_secs_f64() * 1e6, c))
        };
        let (us_plain, a) = time(&plain)?;
        let (us_sliced, b) = time(&sliced)?;
        let same = a.allowed_tokens(vocab.len()) == b.allowed_tokens(vocab.len())
            && a.dependent() == b.dependent();
        println!(
            "| `{re}` | {:?} | {us_plain:.0} | {us_sliced:.0}{} | {:.1}× | {} | {} | {} |",
            String::from_utf8_lossy(pre),
            if b.sliced() { "" } else { " (no slice)" },
            us_plain / us_sliced,
            b.n_allowed,
            b.n_dependent(),
            if same { "yes" } else { "NO" }
        );
        if !same {
            return Err(format!("sliced entry differs for {re}").into());
        }
    }
    Ok(())
}
