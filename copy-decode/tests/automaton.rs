//! The byte automaton of the program FSM ([`ByteState`]) against the
//! reference recognizer of `tests/reference` (an independent, simple parse
//! of the surface syntax): worked examples and every prefix of random and
//! mutated programs.

mod reference;

use proptest::prelude::*;
use reference::{is_program, is_program_prefix};
use zapspec_copy::fsm::ByteState;

fn walk_ok(bytes: &[u8], n: u64) -> Option<ByteState> {
    ByteState::START.walk(bytes, n)
}

#[test]
fn examples() {
    let p = b"<program>\n<copy lines=\"1-3\"/>\n<gen>a<\\/gen>\\\\</gen>\n</program>";
    for n in 0..6u64 {
        let ok = n >= 3;
        assert_eq!(is_program(p, n), ok);
        assert_eq!(walk_ok(p, n).is_some_and(ByteState::is_complete), ok);
    }
    assert!(is_program(b"<program>\n</program>", 0));
    assert!(is_program(b"<program>\n<gen></gen>\n</program>", 0));
    assert!(!is_program_prefix(b"<program>\n<c", 0));
    assert!(!is_program_prefix(b"<program>\n<copy lines=\"01", 20));
    assert!(!is_program_prefix(b"<program>\n<copy lines=\"3-2", 19));
    assert!(is_program_prefix(b"<program>\n<copy lines=\"3-2", 20));
    assert_eq!(walk_ok(b"<program>\n<copy lines=\"3-2", 19), None);
    assert!(walk_ok(b"<program>\n<copy lines=\"3-2", 20).is_some());
    assert!(!is_program_prefix(b"<program>\n<gen>\\x", 3));
    assert!(is_program_prefix(b"<program>\n<gen>\xC3", 3));
    assert!(!is_program_prefix(b"<program>\n<gen>\xC3(", 3));
    assert!(!is_program_prefix(b"<program>\n</program>\n", 3));
}

fn pieces() -> impl Strategy<Value = Vec<u8>> {
    let p: Vec<&'static [u8]> = vec![
        b"<program>\n",
        b"<copy lines=\"",
        b"\"/>\n",
        b"<gen>",
        b"</gen>\n",
        b"</gen>",
        b"</program>",
        b"\\/",
        b"\\\\",
        b"<\\/gen>",
        "é".as_bytes(),
        b"\xE2\x82",
        b"\xAC",
        b"-",
        b"\n",
    ];
    let alpha: &'static [u8] = b"<>/\"\\-\n0123456789abceglmnoprsy";
    prop_oneof![
        prop::sample::select(p).prop_map(|s| s.to_vec()),
        prop::sample::select(alpha.to_vec()).prop_map(|b| vec![b]),
    ]
}

/// A printed valid program for `n` lines (ops from `seeds`), with one
/// byte possibly replaced, so prefixes reach deep into the structure.
fn program_strategy() -> impl Strategy<Value = (Vec<u8>, u64)> {
    let op = (
        0u64..40,
        0u64..40,
        prop::collection::vec(
            prop::sample::select(vec![
                "a", "\\\\", "\\/", "<\\/gen>", "<", "</gen", "é", "😀", "\n", "-", "1",
            ]),
            0..5,
        ),
    );
    (
        1u64..30,
        prop::collection::vec(op, 0..5),
        any::<prop::sample::Index>(),
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(|(n, ops, at, byte, mutate)| {
            let mut p = b"<program>\n".to_vec();
            for (a, b, text) in ops {
                if text.is_empty() {
                    let i = a % n + 1;
                    let j = i + b % (n - i + 1);
                    p.extend_from_slice(format!("<copy lines=\"{i}-{j}\"/>\n").as_bytes());
                } else {
                    p.extend_from_slice(format!("<gen>{}</gen>\n", text.concat()).as_bytes());
                }
            }
            p.extend_from_slice(b"</program>");
            if mutate {
                let k = at.index(p.len());
                p[k] = byte;
            }
            (p, n)
        })
}

proptest! {
    /// Prefixes of (mutated) valid programs: automaton == reference.
    #[test]
    fn automaton_equals_reference_on_programs((bytes, n) in program_strategy()) {
        for k in 0..=bytes.len() {
            let s = walk_ok(&bytes[..k], n);
            prop_assert_eq!(s.is_some(), is_program_prefix(&bytes[..k], n), "{:?}", &bytes[..k]);
            prop_assert_eq!(s.is_some_and(ByteState::is_complete), is_program(&bytes[..k], n));
        }
    }
}

proptest! {
    /// The byte automaton agrees with the reference on every prefix of
    /// random piece strings.
    #[test]
    fn automaton_equals_reference(ps in prop::collection::vec(pieces(), 0..25), n in 0u64..30) {
        let bytes: Vec<u8> = ps.concat();
        for k in 0..=bytes.len() {
            let s = walk_ok(&bytes[..k], n);
            prop_assert_eq!(s.is_some(), is_program_prefix(&bytes[..k], n), "{:?}", String::from_utf8_lossy(&bytes[..k]));
            prop_assert_eq!(s.is_some_and(ByteState::is_complete), is_program(&bytes[..k], n));
        }
    }
}
