//! Shared by the string-schema oracle tests: every short string over a
//! small alphabet, and the check that a compiled schema accepts exactly the
//! strings among them that the `jsonschema` crate says are valid.

use serde_json::Value;
use zapspec_grammar::Recognizer;
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, SchemaError};

/// Every string of up to three characters over `a`, `b`, `1`.
pub fn short_strings() -> Vec<String> {
    let mut all = vec![String::new()];
    let mut last = vec![String::new()];
    for _ in 0..3 {
        let next: Vec<String> = last
            .iter()
            .flat_map(|s| ["a", "b", "1"].map(|c| format!("{s}{c}")))
            .collect();
        all.extend(next.iter().cloned());
        last = next;
    }
    all
}

/// Compiles `schema` and compares its grammar with `oracle` on every
/// string of [`short_strings`]: the first disagreement as a message. An
/// unsatisfiable schema must have no valid short string; any other
/// refusal is a failure.
pub fn agrees_on_short_strings(
    schema: &Value,
    oracle: &jsonschema::Validator,
) -> Result<(), String> {
    match compile_json_schema(schema, &JsonSchemaOptions::default()) {
        Ok(g) => {
            let r = Recognizer::new(&g).map_err(|e| format!("schema {schema}: {e}"))?;
            for s in short_strings() {
                let v = Value::String(s);
                let (got, want) = (r.recognizes(v.to_string().as_bytes()), oracle.is_valid(&v));
                if got != want {
                    return Err(format!(
                        "schema {schema}\ninstance {v}: grammar {got}, validator {want}"
                    ));
                }
            }
            Ok(())
        }
        Err(SchemaError::Unsatisfiable { .. }) => match short_strings()
            .into_iter()
            .find(|s| oracle.is_valid(&Value::String(s.clone())))
        {
            Some(s) => Err(format!(
                "schema {schema}: refused as unsatisfiable, but {s:?} is valid"
            )),
            None => Ok(()),
        },
        Err(e) => Err(format!("schema {schema}: {e}")),
    }
}
