//! The JSON Schema compiler on any bytes: when they parse as JSON, compile
//! with the default options and with the strict ones (`oneOf` only where
//! exact, unknown keywords refused, flexible whitespace). Never a panic;
//! every refusal a typed `SchemaError` with a JSON pointer; a compiled
//! grammar simplifies without panicking.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::time::Duration;
use zapspec_grammar::{simplify, SimplifyConfig};
use zapspec_jsonschema::{
    compile_json_schema, JsonSchemaOptions, OneOfMode, UnknownKeywords, Whitespace,
};

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let strict = JsonSchemaOptions {
        whitespace: Whitespace::Flexible { max_ws: 2 },
        unknown_keywords: UnknownKeywords::Reject,
        one_of: OneOfMode::RequireDisjoint,
        time_budget: Duration::from_secs(2),
        ..Default::default()
    };
    for opts in [JsonSchemaOptions::default(), strict] {
        match compile_json_schema(&schema, &opts) {
            Ok(g) => {
                let _ = simplify(&g, &SimplifyConfig::default());
            }
            Err(e) => {
                let _ = (e.pointer(), e.category(), e.to_string());
            }
        }
    }
});
