//! Every `format` the compiler enforces, checked against an independent
//! validator: the `jsonschema` crate with format validation on (draft
//! 2020-12).
//!
//! For each format: strings sampled from the compiled grammar (a random
//! walk, module `sampler`) must all be valid for the oracle; mutations of
//! them and random strings over the format's alphabet must be accepted by
//! the grammar only if the oracle accepts them. For the formats documented
//! as exact, the converse is checked too (oracle-valid ⇒ grammar-accepted);
//! for the sound subsets the gaps are counted and printed.
//! `cargo test -p zapspec-jsonschema --test format_oracle -- --nocapture`
//! prints the figures.

mod sampler;

use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use zapspec_grammar::Recognizer;
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, SchemaError};

use sampler::Sampler;

/// Formats whose regex is the exact RFC language.
const EXACT: &[&str] = &[
    "date",
    "duration",
    "uuid",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "json-pointer",
    "relative-json-pointer",
];
/// Formats compiled as documented sound subsets.
/// `uri-template` is exact by RFC 6570, which leaves `'` out of literals;
/// the oracle lets it in.
const SUBSET: &[&str] = &["time", "date-time", "hostname", "email", "uri-template"];
/// Formats refused unless `lenient_formats`.
const REFUSED: &[&str] = &["idn-email", "idn-hostname", "iri", "iri-reference", "regex"];

/// Characters mutations draw from: the syntax characters of every format
/// and a few outside all of them.
const ALPHABET: &[char] = &[
    'a', 'Z', 'x', 'n', 'e', 'T', 't', 'P', 'Y', 'M', 'W', 'D', 'H', 'S', 'v', 'f', 'F', '0', '1',
    '2', '3', '5', '6', '9', ':', '/', '?', '#', '[', ']', '@', '!', '$', '&', '\'', '(', ')', '*',
    '+', ',', ';', '=', '%', '-', '.', '_', '~', '"', '\\', ' ', '{', '}', '<', '^', '|', 'é',
    '\u{0}', '\n',
];

fn oracle(name: &str) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&json!({"format": name}))
        .expect("oracle schema builds")
}

fn mutate(s: &str, rng: &mut StdRng) -> String {
    let mut c: Vec<char> = s.chars().collect();
    for _ in 0..rng.random_range(1..=3) {
        let op = rng.random_range(0..4);
        let a = ALPHABET[rng.random_range(0..ALPHABET.len())];
        match op {
            0 if !c.is_empty() => {
                let i = rng.random_range(0..c.len());
                c[i] = a;
            }
            1 if !c.is_empty() => {
                let i = rng.random_range(0..c.len());
                c.remove(i);
            }
            2 if !c.is_empty() => {
                // Duplicate a slice (longer strings, length bounds).
                let i = rng.random_range(0..c.len());
                let j = rng.random_range(i..c.len());
                let dup: Vec<char> = c[i..=j].to_vec();
                let k = rng.random_range(0..=c.len());
                c.splice(k..k, dup);
            }
            _ => {
                let i = rng.random_range(0..=c.len());
                c.insert(i, a);
            }
        }
    }
    c.into_iter().collect()
}

#[derive(Default)]
struct Tally {
    sampled: usize,
    probed: usize,
    unsound: Vec<String>,
    gaps: Vec<String>,
}

fn check_format(name: &str, samples: usize, probes_per_sample: usize, seed: u64) -> Tally {
    let schema = json!({"type": "string", "format": name});
    let g = compile_json_schema(&schema, &JsonSchemaOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let rec = Recognizer::new(&g).expect("recognizer");
    let v = oracle(name);
    let mut sampler = Sampler::new(&g);
    sampler.stop = 0.08;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut t = Tally::default();
    let grammar_accepts = |s: &str| rec.recognizes(serde_json::to_string(s).unwrap().as_bytes());
    for _ in 0..samples {
        // A random string over the alphabet.
        let n = rng.random_range(0..24);
        let r: String = (0..n)
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
            .collect();
        t.probed += 1;
        let (g_ok, o_ok) = (grammar_accepts(&r), v.is_valid(&Value::String(r.clone())));
        if g_ok && !o_ok {
            t.unsound.push(r);
        } else if o_ok && !g_ok {
            t.gaps.push(r);
        }
        let bytes = sampler.sample(&mut rng).expect("format grammar samples");
        t.sampled += 1;
        let inst: Value = serde_json::from_slice(&bytes).expect("a sample is JSON");
        let s = inst.as_str().expect("a sample is a string").to_string();
        if !v.is_valid(&inst) {
            t.unsound.push(s.clone());
        }
        for _ in 0..probes_per_sample {
            let m = mutate(&s, &mut rng);
            t.probed += 1;
            let (g_ok, o_ok) = (grammar_accepts(&m), v.is_valid(&Value::String(m.clone())));
            if g_ok && !o_ok {
                t.unsound.push(m);
            } else if o_ok && !g_ok {
                t.gaps.push(m);
            }
        }
    }
    t
}

#[test]
fn formats_agree_with_jsonschema() {
    let start = Instant::now();
    let (mut total_s, mut total_p, mut total_bad) = (0, 0, 0);
    for (i, name) in EXACT.iter().chain(SUBSET).enumerate() {
        let t0 = Instant::now();
        let t = check_format(name, 1500, 8, 0x5EED + i as u64);
        let exact = EXACT.contains(name);
        println!(
            "format {name:<22} {}: {} sampled, {} probes, {} unsound, {} oracle-valid rejected ({:.1}s){}",
            if exact { "exact " } else { "subset" },
            t.sampled,
            t.probed,
            t.unsound.len(),
            t.gaps.len(),
            t0.elapsed().as_secs_f64(),
            t.gaps.first().map(|g| format!(", e.g. {g:?}")).unwrap_or_default(),
        );
        assert!(
            t.unsound.is_empty(),
            "{name}: accepted but invalid: {:?}",
            &t.unsound[..t.unsound.len().min(10)]
        );
        if exact {
            assert!(
                t.gaps.is_empty(),
                "{name}: valid but rejected: {:?}",
                &t.gaps[..t.gaps.len().min(10)]
            );
        }
        total_s += t.sampled;
        total_p += t.probed;
        total_bad += t.unsound.len();
    }
    println!(
        "formats: {} sampled + {} probes, {} unsound, {:.1}s",
        total_s,
        total_p,
        total_bad,
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn inexact_formats_are_refused_unless_lenient() {
    for name in REFUSED {
        let schema = json!({"type": "string", "format": name});
        match compile_json_schema(&schema, &JsonSchemaOptions::default()) {
            Err(SchemaError::Unsupported { keyword, .. }) => assert_eq!(keyword, "format"),
            other => panic!("{name}: {other:?}"),
        }
        let opts = JsonSchemaOptions {
            lenient_formats: true,
            ..JsonSchemaOptions::default()
        };
        let (_, report) = zapspec_jsonschema::compile_json_schema_report(&schema, &opts).unwrap();
        assert_eq!(report.warnings.len(), 1, "{name}");
        assert!(report.warnings[0].1.contains(name));
    }
}

/// The hole this test pins: `"://"` is no URI reference.
#[test]
fn uri_reference_rejects_colon_in_first_segment() {
    let schema = json!({"type": "string", "format": "uri-reference"});
    let g = compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
    let rec = Recognizer::new(&g).unwrap();
    for bad in ["\"://\"", "\"a:b\"x", "\":\""] {
        assert!(!rec.recognizes(bad.as_bytes()), "{bad}");
    }
    for good in ["\"a:b\"", "\"./a:b\"", "\"//h/p\"", "\"\""] {
        assert!(rec.recognizes(good.as_bytes()), "{good}");
    }
}

/// The length bounds of `hostname` (253) and `email` (local part 64):
/// strings just past them are refused by the oracle and by the grammar;
/// the longest tier shapes are accepted by both.
#[test]
fn hostname_and_email_length_bounds() {
    let check = |name: &str, s: &str, want: bool| {
        let schema = json!({"type": "string", "format": name});
        let g = compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
        let rec = Recognizer::new(&g).unwrap();
        let got = rec.recognizes(serde_json::to_string(s).unwrap().as_bytes());
        assert_eq!(
            oracle(name).is_valid(&json!(s)),
            want,
            "oracle on {name} {s:?}"
        );
        assert_eq!(got, want, "grammar on {name} {s:?}");
    };
    let label = |n: usize| "a".repeat(n);
    let join = |k: usize, n: usize| vec![label(n); k].join(".");
    check("hostname", &join(3, 63), true);
    check("hostname", &join(8, 30), true);
    check("hostname", &join(16, 14), true);
    check("hostname", &join(4, 63), false); // 255 characters
    check("hostname", &label(64), false);
    check("email", &format!("{}@example.com", label(64)), true);
    check("email", &format!("{}@example.com", label(65)), false);
    check("email", &format!("a@{}", join(4, 63)), false);
}

/// `email` with a quoted local part (RFC 5321 `Quoted-string`, the whole
/// local part at most 64 characters): the grammar and the oracle agree on
/// random quoted strings over its syntax characters, on the lengths around
/// the bound and on the examples of XGrammar's suite.
#[test]
fn quoted_local_parts_agree_with_the_oracle() {
    let schema = json!({"type": "string", "format": "email"});
    let g = compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
    let rec = Recognizer::new(&g).unwrap();
    let v = oracle("email");
    let grammar_accepts = |s: &str| rec.recognizes(serde_json::to_string(s).unwrap().as_bytes());
    let mut fixed: Vec<(String, bool)> = [
        (
            r#""very.(),:;<>[]\".VERY.\"very@\\ \"very\".unusual"@strange.example.com"#,
            true,
        ),
        (r#"" "@example.org"#, true),
        (r#""john..doe"@example.org"#, true),
        (r#""a\b"@example.org"#, true),
        (r#""a"b"@example.org"#, false),
        (r#""a\"@example.org"#, false),
        (r#"just"not"right@example.com"#, false),
    ]
    .iter()
    .map(|(s, ok)| (s.to_string(), *ok))
    .collect();
    for n in [61usize, 62, 63] {
        fixed.push((format!("\"{}\"@example.org", "x".repeat(n)), n <= 62));
        // quoted pairs count two characters each
        fixed.push((
            format!("\"{}\"@example.org", "\\x".repeat(n / 2)),
            n / 2 <= 31,
        ));
        fixed.push((
            format!("\"{}x\"@example.org", "\\x".repeat(n / 2)),
            n / 2 * 2 < 62,
        ));
    }
    for (s, want) in &fixed {
        assert_eq!(v.is_valid(&json!(s)), *want, "oracle on {s:?}");
        assert_eq!(grammar_accepts(s), *want, "grammar on {s:?}");
    }
    const SYNTAX: &[char] = &[
        'a', 'Z', '0', '.', '@', ' ', '"', '\\', '(', ']', '~', '\t', 'é',
    ];
    let mut rng = StdRng::seed_from_u64(11);
    let mut accepted = 0;
    for _ in 0..4000 {
        let n = rng.random_range(0..70);
        let body: String = (0..n)
            .map(|_| SYNTAX[rng.random_range(0..SYNTAX.len())])
            .collect();
        let s = format!("\"{body}\"@example.org");
        let (g_ok, o_ok) = (grammar_accepts(&s), v.is_valid(&json!(s)));
        // the oracle also lets a tab in (RFC 5322's `WSP`); RFC 5321's
        // `qtextSMTP` has none, so the grammar is stricter only there
        if body.contains('\t') {
            assert!(!g_ok || o_ok, "grammar accepts {s:?}, the oracle does not");
        } else {
            assert_eq!(g_ok, o_ok, "grammar {g_ok}, oracle {o_ok} on {s:?}");
        }
        accepted += usize::from(g_ok);
    }
    assert!(accepted > 100, "{accepted}");
}
