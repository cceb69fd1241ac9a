//! Fuzzes the program parser (paper Fig. 7's surface syntax) and the
//! resolver R(P, D) (§2.2) on arbitrary bytes:
//!
//! - non-UTF-8 input is ignored (the parser takes `&str`);
//! - a parse never panics; on success `parse(print(p)) == p` and
//!   `print` is a fixed point;
//! - the program resolves against small documents (LF + CRLF + no final
//!   newline, and the empty document) without panicking, and resolves
//!   exactly when the token FSM's byte automaton accepts its printed text
//!   for that document's line count (the FSM and the resolver agree);
//! - the input as a document: its oracle program against `DOC` resolves
//!   back to it (hostile documents: control bytes, NULs, long lines).

#![no_main]

use libfuzzer_sys::fuzz_target;
use zapspec_copy::{oracle_program, resolve, ByteState, LineIndex, Program};

/// Five lines: CRLF in one, no final newline.
const DOC: &str = "fn main() {\n    let x = 1;\r\n\n    println!(\"{x}\");\n}";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = Program::parse(text) {
        let printed = p.print();
        let q = Program::parse(&printed).expect("a printed program parses");
        assert_eq!(q, p, "parse(print(p)) != p");
        assert_eq!(q.print(), printed, "print is not a fixed point");
        for doc in [DOC, ""] {
            let n = LineIndex::new(doc).len() as u64;
            let resolved = resolve(&p, doc);
            let fsm = ByteState::START.walk(printed.as_bytes(), n);
            assert_eq!(
                resolved.is_ok(),
                fsm.is_some_and(ByteState::is_complete),
                "resolver and FSM disagree on {printed:?} for {n} lines: {resolved:?}"
            );
        }
    }
    // The input as a document.
    for (before, after) in [(DOC, text), (text, DOC)] {
        let p = oracle_program(before, after);
        let q = Program::parse(&p.print()).expect("an oracle program parses");
        assert_eq!(resolve(&q, before).as_deref(), Ok(after));
    }
});
