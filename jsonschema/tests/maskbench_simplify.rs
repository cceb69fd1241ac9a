//! The §4.5 pipeline on real grammars: JSON Schemas from MaskBench compiled
//! by `json_schema`, simplified, and every test instance (serialised
//! compactly) checked to be accepted by the simplified grammar exactly when
//! the original accepts it. Uses a deterministic sample of the corpus to
//! stay within the CI budget; skips with a message when the data is absent.

use std::path::Path;

use zapspec_grammar::{simplify, GrammarError, Recognizer, SimplifyConfig};
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions};

/// Every `STRIDE`-th schema; `MASKBENCH_STRIDE=1` checks the whole corpus.
const STRIDE: usize = 40;

#[test]
fn simplify_keeps_membership_on_maskbench_sample() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/maskbench");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("SKIP: {} not found", dir.display());
        return;
    };
    let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    let (mut schemas, mut instances, mut accepted, mut before, mut after) =
        (0, 0, 0, 0usize, 0usize);
    // compiled grammars, and those skipped for a product past `dfa_states`
    let (mut compiled, mut over_limit) = (0usize, 0usize);
    let stride = std::env::var("MASKBENCH_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(STRIDE)
        .max(1);
    for path in files.iter().step_by(stride) {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let Ok(g) = compile_json_schema(&doc["schema"], &JsonSchemaOptions::default()) else {
            continue;
        };
        compiled += 1;
        let s = match simplify(&g, &SimplifyConfig::default()) {
            Ok(s) => s,
            Err(GrammarError::EmptyLanguage { .. }) => continue,
            // the eager product of an intersection terminal past
            // `dfa_states` (below)
            Err(GrammarError::LimitExceeded { .. }) => {
                over_limit += 1;
                continue;
            }
            Err(e) => panic!("{}: {e}", path.display()),
        };
        let (r0, r1) = match (Recognizer::new(&g), Recognizer::new(&s.grammar)) {
            (Ok(a), Ok(b)) => (a, b),
            // an intersection terminal whose eager product exceeds the
            // recognizer's `dfa_states` (a long `format` under
            // `maxLength`): both grammars hold it, neither loads
            (Err(GrammarError::LimitExceeded { .. }), Err(GrammarError::LimitExceeded { .. })) => {
                over_limit += 1;
                continue;
            }
            (a, b) => panic!(
                "{}: the grammars do not load: {:?} / {:?}",
                path.display(),
                a.err(),
                b.err()
            ),
        };
        schemas += 1;
        before += g.stats().rules;
        after += s.grammar.stats().rules;
        for t in doc["tests"].as_array().into_iter().flatten() {
            let inst = serde_json::to_string(&t["data"]).unwrap();
            let a = r0.recognizes(inst.as_bytes());
            assert_eq!(
                a,
                r1.recognizes(inst.as_bytes()),
                "{}: {inst}",
                path.display()
            );
            instances += 1;
            accepted += a as usize;
        }
    }
    println!(
        "{schemas} schemas, {instances} instances ({accepted} accepted); rules {before} -> {after} after simplify; {over_limit} of {compiled} past the recognizer's limits"
    );
    assert!(schemas > 0 && instances > 0);
    // as in the census and the oracle: at most 1 % of the compiled
    assert!(
        over_limit * 100 <= compiled,
        "{over_limit} of {compiled} grammars beyond the recognizer's limits"
    );
}
