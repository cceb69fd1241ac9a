//! Cost of one cold context-independent cache entry over o200k, with and
//! without vocabulary slices ([`zapspec_earley::slicer`]), measured side by side:
//! the baseline walks the whole token trie with the terminal's DFA; the
//! sliced entry takes the precomputed slice set and walks only the tokens
//! outside it. Both entries are checked to be identical.
//!
//! `cargo run -p zapspec-earley --profile release-fast --example ci_cost`
use std::sync::Arc;
use std::time::Instant;

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
        plain.trie_nodes(),
        plain.trie_tokens(),
        t_plain.as_secs_f64() * 1e3,
        t_sliced.as_secs_f64() * 1e3,
        sliced.slices().len()
    );
    for s in sliced.slices() {
        for t in s.tiers() {
            println!(
                "slice `{}`, tokens of at most {} characters: {} inside, {} outside ({} trie nodes)",
                s.regex(),
                t.max_chars(),
                t.num_tokens(),
                t.rest_tokens(),
                t.rest_nodes()
            );
        }
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
        // The entry's computation alone: the terminal is compiled first
        // (by a prefix no terminal here matches, 0xFF being in no UTF-8
        // text, so no entry is computed), and the time of a second, cached
        // call (the lookup and the copy out as plain data) is taken off.
        let time = |index: &VocabIndex| -> Result<_, Box<dyn std::error::Error>> {
            let none = index.terminal_tokens(re, b"\xFF")?;
            assert!(none.is_none(), "{re} matches 0xFF");
            let t = Instant::now();
            let c = index.terminal_tokens(re, pre)?.ok_or("dead prefix")?;
            let cold = t.elapsed();
            let t = Instant::now();
            let again = index.terminal_tokens(re, pre)?;
            let warm = t.elapsed();
            assert_eq!(again.as_ref(), Some(&c));
            Ok((cold.saturating_sub(warm).as_secs_f64() * 1e6, c))
        };
        let (us_plain, a) = time(&plain)?;
        let (us_sliced, b) = time(&sliced)?;
        let same = a.allowed == b.allowed && a.dependent == b.dependent;
        println!(
            "| `{re}` | {:?} | {us_plain:.0} | {us_sliced:.0}{} | {:.1}× | {} | {} | {} |",
            String::from_utf8_lossy(pre),
            if b.sliced { "" } else { " (no slice)" },
            us_plain / us_sliced,
            b.allowed.count(),
            b.dependent.len(),
            if same { "yes" } else { "NO" }
        );
        if !same {
            return Err(format!("sliced entry differs for {re}").into());
        }
    }
    Ok(())
}
