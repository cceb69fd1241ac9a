//! MaskBench against an independent validator: for compiled MaskBench
//! schemas, instances sampled from the grammar (random walks, module
//! `sampler`) must be valid for the `jsonschema` crate (format validation
//! on, the schema's own `$schema` draft, 2020-12 when absent), and every
//! MaskBench test instance the grammar accepts (in the grammar's key
//! order, `canonical_instances`) must be valid for it too.
//!
//! Both are checked with [`OneOfMode::RequireDisjoint`], the sound mode and
//! the default; under the opt-in [`OneOfMode::AsAnyOf`] an instance valid
//! for two `oneOf` branches is knowingly accepted, and those mismatches are
//! only counted (printed), not failed.
//!
//! The default run takes every 23rd file (a fixed sample, well under a
//! minute); `cargo test -p zapspec-jsonschema --release --test maskbench_oracle
//! -- --ignored --nocapture` runs every file with more samples. Skips with
//! a message when `../shared/data/maskbench` is absent. The same checks run
//! on the large real-world set `../shared/data/maskbench-hard`.

mod sampler;

use std::path::PathBuf;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::Value;
use zapspec_grammar::Recognizer;
use zapspec_jsonschema::{canonical_instances, compile_json_schema, JsonSchemaOptions, OneOfMode};

use sampler::Sampler;

fn data_dir(set: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data")
        .join(set)
}

#[derive(Default, Debug)]
struct Tally {
    files: usize,
    compiled: usize,
    oracle_unbuildable: usize,
    /// Grammars whose reference recognizer exceeds a limit (an
    /// intersection terminal, `Terminal::And`, whose product the
    /// recognizer builds eagerly: over `dfa_states` for a long `format`
    /// under `maxLength`); their test instances are not checked.
    recognizer_unbuildable: usize,
    sampled: usize,
    sampled_not_json: usize,
    sampled_duplicate_keys: usize,
    /// Oracle-rejected samples holding a number it reads rounded.
    sampled_imprecise: usize,
    tests_accepted: usize,
    /// `(file, instance)` of grammar-accepted instances the oracle rejects.
    mismatches: Vec<(String, String)>,
}

/// Whether a value holds a number serde_json keeps as an `f64` that is
/// integral and past 2^53 (an integer literal it had to round).
fn has_imprecise_number(v: &Value) -> bool {
    match v {
        Value::Number(n) => n
            .as_f64()
            .is_some_and(|f| n.is_f64() && f.fract() == 0.0 && f.abs() >= 9_007_199_254_740_992.0),
        Value::Array(a) => a.iter().any(has_imprecise_number),
        Value::Object(m) => m.values().any(has_imprecise_number),
        _ => false,
    }
}

/// Whether a JSON text has an object with a repeated key (`false` for
/// text that does not parse).
fn has_duplicate_key(text: &[u8]) -> bool {
    use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Visitor};
    struct Walk;
    impl<'de> Deserialize<'de> for Walk {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Walk, D::Error> {
            d.deserialize_any(Walk)
        }
    }
    impl<'de> Visitor<'de> for Walk {
        type Value = Walk;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Walk, E> {
            Ok(Walk)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Walk, E> {
            Ok(Walk)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Walk, E> {
            Ok(Walk)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Walk, E> {
            Ok(Walk)
        }
        fn visit_str<E>(self, _: &str) -> Result<Walk, E> {
            Ok(Walk)
        }
        fn visit_unit<E>(self) -> Result<Walk, E> {
            Ok(Walk)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Walk, A::Error> {
            while a.next_element::<Walk>()?.is_some() {}
            Ok(Walk)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Walk, A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(k) = a.next_key::<String>()? {
                if !seen.insert(k) {
                    return Err(A::Error::custom("duplicate key"));
                }
                a.next_value::<Walk>()?;
            }
            Ok(Walk)
        }
    }
    matches!(serde_json::from_slice::<Walk>(text), Err(e) if e.to_string().starts_with("duplicate key"))
}

fn check_file(path: &PathBuf, opts: &JsonSchemaOptions, per_schema: usize, t: &mut Tally) {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("?")
        .to_string();
    let Some(file) = std::fs::read_to_string(path)
        .ok()
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
    else {
        return;
    };
    t.files += 1;
    let schema = &file["schema"];
    let Ok(g) = compile_json_schema(schema, opts) else {
        return;
    };
    t.compiled += 1;
    let Ok(v) = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
    else {
        t.oracle_unbuildable += 1;
        return;
    };
    // The recognizer first: its terminals are the sampler's, and a
    // product past a limit would be retried by every sample.
    let rec = match Recognizer::new(&g) {
        Ok(r) => r,
        Err(zapspec_grammar::GrammarError::LimitExceeded { .. }) => {
            t.recognizer_unbuildable += 1;
            return;
        }
        Err(e) => panic!("compiled grammar loads: {e}"),
    };
    let mut s = Sampler::new(&g);
    s.max_len = 4096;
    s.stop = 0.3;
    let mut rng = StdRng::seed_from_u64(
        name.bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)),
    );
    for _ in 0..per_schema {
        let Some(bytes) = s.sample(&mut rng) else {
            break;
        };
        t.sampled += 1;
        if has_duplicate_key(&bytes) {
            // Two additional members with one key (module docs of the
            // crate: a grammar cannot exclude it); a validator sees one.
            t.sampled_duplicate_keys += 1;
            continue;
        }
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(inst) => {
                if !v.is_valid(&inst) && has_imprecise_number(&inst) {
                    // An integer past 2^53 the oracle reads as an f64
                    // (no arbitrary precision): its `multipleOf` and
                    // bounds are judged on a rounded value.
                    t.sampled_imprecise += 1;
                } else if !v.is_valid(&inst) {
                    if std::env::var_os("ORACLE_DEBUG").is_some() {
                        for e in v.iter_errors(&inst) {
                            eprintln!("oracle error in {name}: {e} at {}", e.instance_path());
                        }
                    }
                    t.mismatches
                        .push((name.clone(), String::from_utf8_lossy(&bytes).into()));
                }
            }
            // JSON, but beyond f64 (serde_json without arbitrary
            // precision refuses it): the oracle cannot read it.
            Err(e) if e.to_string().starts_with("number out of range") => {
                t.sampled_not_json += 1;
            }
            Err(e) => {
                t.mismatches.push((name.clone(), format!("not JSON ({e})")));
                if std::env::var_os("ORACLE_DEBUG").is_some() {
                    eprintln!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes));
                }
            }
        }
    }
    for test in file["tests"].as_array().into_iter().flatten() {
        let data = &test["data"];
        let accepted = rec.recognizes(data.to_string().as_bytes())
            || canonical_instances(schema, data, opts)
                .map(|c| c.iter().any(|c| rec.recognizes(c.to_string().as_bytes())))
                .unwrap_or(false);
        if accepted {
            t.tests_accepted += 1;
            if !v.is_valid(data) {
                t.mismatches.push((name.clone(), data.to_string()));
            }
        }
    }
}

/// `max_unbuildable_pct`: the share of compiled grammars the reference
/// recognizer may skip for a limit (its eager products), so the check
/// cannot silently stop running.
fn run(set: &str, every: usize, per_schema: usize, max_unbuildable_pct: usize) {
    let dir = data_dir(set);
    if !dir.is_dir() {
        println!(
            "maskbench_oracle: SKIPPED, data directory {} is absent",
            dir.display()
        );
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read data dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    // ORACLE_ONLY=NAME restricts the run to files whose name contains NAME.
    let only = std::env::var("ORACLE_ONLY").ok();
    let files: Vec<PathBuf> = files
        .into_iter()
        .filter(|p| {
            only.as_deref()
                .is_none_or(|o| p.to_string_lossy().contains(o))
        })
        .step_by(every)
        .collect();
    for (label, one_of, strict) in [
        (
            "oneOf: RequireDisjoint (default)",
            OneOfMode::RequireDisjoint,
            true,
        ),
        ("oneOf: AsAnyOf (opt-in)", OneOfMode::AsAnyOf, false),
    ] {
        let t0 = Instant::now();
        let opts = JsonSchemaOptions {
            one_of,
            ..JsonSchemaOptions::default()
        };
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8);
        let parts: Vec<Tally> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..workers)
                .map(|w| {
                    let mine: Vec<&PathBuf> = files.iter().skip(w).step_by(workers).collect();
                    let opts = &opts;
                    sc.spawn(move || {
                        let mut t = Tally::default();
                        for p in mine {
                            check_file(p, opts, per_schema, &mut t);
                        }
                        t
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("worker")).collect()
        });
        let mut t = Tally::default();
        for p in parts {
            t.files += p.files;
            t.compiled += p.compiled;
            t.oracle_unbuildable += p.oracle_unbuildable;
            t.recognizer_unbuildable += p.recognizer_unbuildable;
            t.sampled += p.sampled;
            t.sampled_not_json += p.sampled_not_json;
            t.sampled_duplicate_keys += p.sampled_duplicate_keys;
            t.sampled_imprecise += p.sampled_imprecise;
            t.tests_accepted += p.tests_accepted;
            t.mismatches.extend(p.mismatches);
        }
        t.mismatches.sort();
        println!(
            "maskbench_oracle [{label}]: {} files (every {every}th), {} compiled, {} the oracle cannot build, {} the recognizer cannot (a limit); \
             {} instances sampled ({} with a number beyond f64, {} with a repeated key: unchecked; {} rejected on a rounded number), {} test instances accepted; \
             {} oracle-invalid accepted; {:.1}s",
            t.files,
            t.compiled,
            t.oracle_unbuildable,
            t.recognizer_unbuildable,
            t.sampled,
            t.sampled_not_json,
            t.sampled_duplicate_keys,
            t.sampled_imprecise,
            t.tests_accepted,
            t.mismatches.len(),
            t0.elapsed().as_secs_f64()
        );
        for (f, i) in t.mismatches.iter().take(12) {
            let short: String = i.chars().take(200).collect();
            println!("  {f}: {short}");
        }
        // the recognizer's eager products stay within its limits on
        // nearly every grammar
        assert!(
            t.recognizer_unbuildable * 100 <= t.compiled * max_unbuildable_pct,
            "{} of {} grammars beyond the recognizer's limits",
            t.recognizer_unbuildable,
            t.compiled
        );
        if strict {
            assert!(
                t.mismatches.is_empty(),
                "grammar accepts instances the oracle rejects"
            );
        }
    }
}

#[test]
fn maskbench_sample_agrees_with_jsonschema() {
    run("maskbench", 23, 20, 1);
}

#[test]
fn maskbench_hard_sample_agrees_with_jsonschema() {
    // large real-world grammars: more of them exceed the eager recognizer
    run("maskbench-hard", 23, 20, 3);
}

#[test]
#[ignore = "every MaskBench file; minutes"]
fn maskbench_all_agree_with_jsonschema() {
    run("maskbench", 1, 50, 1);
}

#[test]
#[ignore = "every file of the large real-world set; minutes"]
fn maskbench_hard_all_agree_with_jsonschema() {
    run("maskbench-hard", 1, 50, 3);
}
