//! Programs: parse / print round trips, malformed inputs, the resolver and
//! oracle programs (paper §2.2, Fig. 7, and the "oracle programs
//! round-trip" result).

use proptest::prelude::*;
use zapspec_copy::{
    oracle_program, resolve, LineIndex, Op, OpKind, ParseErrorKind, Program, ResolveError,
};

/// Gen texts rich in the characters that matter to escaping.
fn gen_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("</gen>".to_owned()),
        Just("<\\/gen>".to_owned()),
        Just("\\".to_owned()),
        Just("\\\\".to_owned()),
        Just("</".to_owned()),
        Just("<".to_owned()),
        Just("/".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("</program>".to_owned()),
        Just("<copy lines=\"1-2\"/>".to_owned()),
        Just("é漢🦀".to_owned()),
        Just("\0".to_owned()),
        "[a-z ]{0,4}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1usize..1_000_000, 0usize..1000).prop_map(|(s, l)| Op::copy(s, s + l)),
        (1usize..=usize::MAX).prop_map(|s| Op::copy(s, s)),
        Just(Op::copy(1, usize::MAX)),
        gen_text().prop_map(Op::gen),
    ]
}

fn program() -> impl Strategy<Value = Program> {
    prop::collection::vec(op(), 0..8).prop_map(Program::new)
}

/// A document of lines with mixed terminators, maybe without a final one.
fn document() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "[a-c]{0,3}",
        Just(String::new()),
        Just("x\r".to_owned()),
        Just("é".to_owned()),
    ];
    let term = prop_oneof![Just("\n"), Just("\r\n"), Just("")];
    prop::collection::vec((line, term), 0..12).prop_map(|v| {
        let n = v.len();
        v.into_iter()
            .enumerate()
            .map(|(i, (l, t))| {
                // Only the last line may lack a terminator.
                let t = if t.is_empty() && i + 1 < n { "\n" } else { t };
                format!("{l}{t}")
            })
            .collect()
    })
}

/// An edit of a document: line inserts, deletes, replacements, terminator
/// changes.
fn edited(doc: String) -> impl Strategy<Value = (String, String)> {
    let lines: Vec<String> = LineIndex::new(&doc).lines().map(str::to_owned).collect();
    let n = lines.len();
    let edit = (0u8..5, 0usize..n + 1, "[a-z]{0,3}(\n|\r\n|)");
    prop::collection::vec(edit, 0..6).prop_map(move |edits| {
        let mut ls = lines.clone();
        for (kind, at, text) in edits {
            let at = at.min(ls.len());
            match kind {
                0 => ls.insert(at, text),
                1 if at < ls.len() => {
                    ls.remove(at);
                }
                2 if at < ls.len() => ls[at] = text,
                3 if at < ls.len() => {
                    let l = &mut ls[at];
                    if let Some(s) = l.strip_suffix("\r\n") {
                        *l = format!("{s}\n");
                    } else if let Some(s) = l.strip_suffix('\n') {
                        *l = format!("{s}\r\n");
                    } else {
                        l.push('\n');
                    }
                }
                _ => {
                    if let Some(l) = ls.last_mut() {
                        while l.ends_with('\n') || l.ends_with('\r') {
                            l.pop();
                        }
                    }
                }
            }
        }
        (doc.clone(), ls.concat())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_print_round_trip(p in program()) {
        let s = p.print();
        let q = Program::parse(&s);
        prop_assert_eq!(q.as_ref(), Ok(&p));
        prop_assert_eq!(q.map(|q| q.print()), Ok(s));
    }

    #[test]
    fn printed_text_has_no_raw_close_inside_gen(text in gen_text()) {
        let s = Program::new(vec![Op::gen(text)]).print();
        // The only raw `</gen>` is the op's own terminator.
        prop_assert_eq!(s.matches("</gen>").count(), 1);
    }

    #[test]
    fn random_strings_never_panic(s in any::<String>()) {
        let _ = Program::parse(&s);
        let with_header = format!("<program>\n{s}");
        let _ = Program::parse(&with_header);
    }

    #[test]
    fn random_structural_strings_never_panic(
        parts in prop::collection::vec(prop_oneof![
            Just("<program>"), Just("</program>"), Just("\n"), Just("<copy lines=\""),
            Just("\"/>"), Just("-"), Just("0"), Just("1"), Just("99999999999999999999999"),
            Just("<gen>"), Just("</gen>"), Just("\\"), Just("/"), Just("é"), Just("<"),
        ], 0..20)
    ) {
        let s = parts.concat();
        if let Ok(p) = Program::parse(&s) {
            prop_assert_eq!(p.print(), s);
        }
    }

    #[test]
    fn mutated_programs_never_panic(p in program(), cut in any::<prop::sample::Index>(),
                                    ins in any::<char>(), mode in 0u8..3) {
        let s = p.print();
        let mut at = cut.index(s.len() + 1);
        while !s.is_char_boundary(at) { at -= 1; }
        let m = match mode {
            0 => s[..at].to_owned(),
            1 => format!("{}{}{}", &s[..at], ins, &s[at..]),
            _ => {
                let mut rest = s[at..].chars();
                rest.next();
                format!("{}{}", &s[..at], rest.as_str())
            }
        };
        if let Err(e) = Program::parse(&m) {
            prop_assert!(e.offset <= m.len());
            prop_assert!(e.line >= 1 && e.column >= 1);
            let _ = e.to_string();
        }
        if mode == 0 && at < s.len() {
            prop_assert!(Program::parse(&m).is_err(), "proper prefix parsed: {:?}", m);
        }
    }

    #[test]
    fn oracle_round_trips((before, after) in document().prop_flat_map(edited)) {
        let p = oracle_program(&before, &after);
        prop_assert_eq!(resolve(&p, &before), Ok(after.clone()));
        let q = Program::parse(&p.print()).unwrap();
        prop_assert_eq!(resolve(&q, &before), Ok(after.clone()));
        // Merged: no two adjacent gens, no two adjacent contiguous copies.
        for w in p.ops.windows(2) {
            let merged_gen = matches!((&w[0], &w[1]), (Op::Gen { .. }, Op::Gen { .. }));
            let contiguous = matches!((&w[0], &w[1]),
                (Op::Copy { end, .. }, Op::Copy { start, .. }) if end + 1 == *start);
            prop_assert!(!merged_gen && !contiguous, "{:?}", p);
        }
    }

    #[test]
    fn oracle_round_trips_unrelated_docs(before in document(), after in document()) {
        let p = oracle_program(&before, &after);
        prop_assert_eq!(resolve(&p, &before), Ok(after.clone()));
        let st = p.stats();
        prop_assert_eq!(st.ops, st.copy_ops + st.gen_ops);
        let copied: usize = p.ops.iter().filter_map(Op::lines).map(|r| r.count()).sum();
        prop_assert_eq!(st.copied_lines, copied);
    }

    #[test]
    fn identity_is_one_copy(doc in document()) {
        let p = oracle_program(&doc, &doc);
        let n = LineIndex::new(&doc).len();
        let want = if n == 0 { vec![] } else { vec![Op::copy(1, n)] };
        prop_assert_eq!(p.ops, want);
    }
}

fn parse_err(s: &str) -> zapspec_copy::ParseError {
    match Program::parse(s) {
        Ok(p) => panic!("{s:?} parsed as {p:?}"),
        Err(e) => e,
    }
}

#[test]
fn malformed_inputs_are_typed_errors() {
    use ParseErrorKind::*;
    let cases: &[(&str, ParseErrorKind, Option<usize>, Option<OpKind>)] = &[
        ("", UnexpectedEnd, None, None),
        ("<prog", UnexpectedEnd, None, None),
        ("<programme>", MissingHeader, None, None),
        ("<program></program>", ExpectedNewline, None, None),
        ("<program>\n", UnexpectedEnd, Some(0), None),
        ("<program>\n</program>\n", TrailingInput, None, None),
        ("<program>\n</program>x", TrailingInput, None, None),
        ("<program>\n<del/>\n</program>", UnknownTag, Some(0), None),
        ("<program>\nhello\n</program>", UnknownTag, Some(0), None),
        (
            "<program>\n<copy lines=\"1-2\"/></program>",
            ExpectedNewline,
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<copy lines=\"1-2\"/>\n\n</program>",
            UnknownTag,
            Some(1),
            None,
        ),
        (
            "<program>\n<copy lines='1-2'/>\n</program>",
            UnknownTag,
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<copy lines=\"01-2\"/>\n</program>",
            LeadingZero,
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<copy lines=\"0-2\"/>\n</program>",
            ZeroLine,
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<copy lines=\"3-2\"/>\n</program>",
            ReversedRange { start: 3, end: 2 },
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<copy lines=\"1 -2\"/>\n</program>",
            Expected("-"),
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<copy lines=\"1-\"/>\n</program>",
            ExpectedDigit,
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<copy lines=\"+1-2\"/>\n</program>",
            ExpectedDigit,
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<copy lines=\"1-2\" />\n</program>",
            Expected("\"/>"),
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<copy lines=\"1-99999999999999999999999\"/>\n</program>",
            NumberOverflow,
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<copy lines=\"1-18446744073709551616\"/>\n</program>",
            NumberOverflow,
            Some(0),
            Some(OpKind::Copy),
        ),
        (
            "<program>\n<gen>abc",
            UnexpectedEnd,
            Some(0),
            Some(OpKind::Gen),
        ),
        (
            "<program>\n<gen>a\\",
            UnexpectedEnd,
            Some(0),
            Some(OpKind::Gen),
        ),
        (
            "<program>\n<gen>a\\n</gen>\n</program>",
            BadEscape,
            Some(0),
            Some(OpKind::Gen),
        ),
        (
            "<program>\n<gen>x</gen>\n<gen>a</gen>b</gen>\n</program>",
            ExpectedNewline,
            Some(1),
            Some(OpKind::Gen),
        ),
        (
            "<program>\n<generate>x</gen>\n</program>",
            UnknownTag,
            Some(0),
            Some(OpKind::Gen),
        ),
    ];
    for (s, kind, op_index, op_kind) in cases {
        let e = parse_err(s);
        assert_eq!(&e.kind, kind, "{s:?}: {e}");
        assert_eq!((e.op_index, e.op_kind), (*op_index, *op_kind), "{s:?}: {e}");
    }
    let e = parse_err("<program>\n<gen>ok</gen>\n<copy lines=\"1-02\"/>\n</program>");
    assert_eq!((e.line, e.column, e.offset), (3, 16, 39));
    assert!(
        e.to_string().starts_with("line 3, column 16 (op 1, copy)"),
        "{e}"
    );
}

#[test]
fn escapes_decode_anywhere() {
    let p = Program::parse("<program>\n<gen>a\\/b\\\\c<\\/gen></gen>\n</program>").unwrap();
    assert_eq!(p.ops, vec![Op::gen("a/b\\c</gen>")]);
    // `usize::MAX` itself is a line number.
    let s = format!("<program>\n<copy lines=\"1-{}\"/>\n</program>", usize::MAX);
    assert_eq!(
        Program::parse(&s).unwrap().ops,
        vec![Op::copy(1, usize::MAX)]
    );
}

#[test]
fn resolve_preserves_terminators() {
    let doc = "one\r\ntwo\nthree";
    let p = Program::new(vec![
        Op::copy(3, 3),
        Op::gen("+"),
        Op::copy(1, 2),
        Op::copy(1, 3),
    ]);
    assert_eq!(
        resolve(&p, doc).unwrap(),
        "three+one\r\ntwo\none\r\ntwo\nthree"
    );
    assert_eq!(resolve(&Program::default(), doc).unwrap(), "");
}

#[test]
fn resolve_errors_name_the_op() {
    let doc = "a\nb\n";
    let bad = |op: Op| resolve(&Program::new(vec![Op::copy(1, 1), Op::gen("x"), op]), doc);
    assert_eq!(bad(Op::copy(0, 1)), Err(ResolveError::ZeroLine { op: 2 }));
    assert_eq!(
        bad(Op::copy(2, 1)),
        Err(ResolveError::Reversed {
            op: 2,
            start: 2,
            end: 1
        })
    );
    assert_eq!(
        bad(Op::copy(2, 3)),
        Err(ResolveError::OutOfRange {
            op: 2,
            start: 2,
            end: 3,
            lines: 2
        })
    );
    assert_eq!(
        bad(Op::copy(1, usize::MAX)),
        Err(ResolveError::OutOfRange {
            op: 2,
            start: 1,
            end: usize::MAX,
            lines: 2
        })
    );
    assert_eq!(
        resolve(&Program::new(vec![Op::copy(1, 1)]), ""),
        Err(ResolveError::OutOfRange {
            op: 0,
            start: 1,
            end: 1,
            lines: 0
        })
    );
    assert_eq!(resolve(&Program::new(vec![Op::gen("x")]), "").unwrap(), "x");
}
