//! `Model::load` by path: the shipped byte-level checkpoint (safetensors +
//! config, no tokenizer file: the byte vocabulary), and bad paths as typed
//! errors. SmolLM2 (GGUF) is exercised by `tests/facade`.

use std::path::{Path, PathBuf};

use zapspec::{Error, Model, Prompt, StopReason};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../models")
        .join(name)
}

#[test]
fn the_shipped_byte_model_loads_and_generates_under_a_schema() {
    let m = Model::load(shipped("causal-bytes")).unwrap();
    assert_eq!(m.vocab().name(), "bytes");
    assert!(m.tokenizer.chat().is_none());
    let json = m
        .json_schema_str(
            r#"{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}"#,
        )
        .unwrap();
    // the model's window is 64 bytes: a short answer
    let mut p = m.builder(json).max_tokens(24).seed(3).build().unwrap();
    let mut streamed = String::new();
    let out = p
        .generate_stream(Prompt::default(), |s| streamed.push_str(s))
        .unwrap();
    assert_eq!(streamed, out.text);
    assert!(out.text.starts_with("{\"n\":"), "{}", out.text);
    if out.stop.is_complete() {
        let v: serde_json::Value = serde_json::from_str(&out.text).unwrap();
        assert!(v["n"].is_i64(), "{}", out.text);
    } else {
        assert_eq!(out.stop, StopReason::MaxTokens);
        assert_eq!(out.tokens.len(), 24);
    }
    // chat needs a template the byte model does not have
    assert!(matches!(
        p.generate_chat(&[zapspec::Message::user("hi")]),
        Err(Error::Config(_))
    ));
}

#[test]
fn bad_paths_are_typed_errors() {
    let missing = Model::load("no/such/model.gguf").unwrap_err();
    assert!(matches!(missing, Error::Config(_)), "{missing:?}");
    // a file that is not GGUF
    let not_gguf = Model::load(shipped("causal-bytes").join("config.json")).unwrap_err();
    assert!(
        matches!(not_gguf, Error::Vocab(_) | Error::Model(_)),
        "{not_gguf:?}"
    );
    // a directory without a checkpoint
    let empty = Model::load(shipped("")).unwrap_err();
    assert!(matches!(empty, Error::Config(_)), "{empty:?}");
}
