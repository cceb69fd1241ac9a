//! Hostile tokenizer files: no table is sized by a token id or
//! length read from the file before it is checked against the file's
//! length and [`MAX_VOCAB_TOKENS`]. Each case ends quickly in a typed
//! `VocabError` (the asserted bound is generous; each takes milliseconds).

use zapspec_testkit::hostile::timed;
use zapspec_vocab::{TokenVocab, VocabError, MAX_VOCAB_TOKENS};

fn tokenizer_json(extra_id: Option<u64>, added_id: Option<u64>) -> String {
    let mut vocab = serde_json::json!({"a": 0, "b": 1, "ab": 2, "Ġ": 3, "<|endoftext|>": 4});
    if let Some(id) = extra_id {
        vocab["z"] = id.into();
    }
    let mut added = vec![
        serde_json::json!({"id": 4, "content": "<|endoftext|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}),
    ];
    if let Some(id) = added_id {
        added.push(serde_json::json!({"id": id, "content": "<x>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}));
    }
    serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                  "vocab": vocab, "merges": ["a b"]}
    })
    .to_string()
}

fn load(name: &str, text: &str) -> Result<TokenVocab, VocabError> {
    let p = std::env::temp_dir().join(format!(
        "zapspec-hostile-{}-{name}.json",
        std::process::id()
    ));
    std::fs::write(&p, text).unwrap();
    timed(name, || TokenVocab::from_hf_tokenizer_json(&p, None))
}

#[test]
fn the_tiny_tokenizer_loads() {
    let v = load("tiny", &tokenizer_json(None, None)).unwrap();
    assert_eq!(zapspec_core::Vocabulary::len(&v), 5);
}

#[test]
fn huge_token_ids_are_refused() {
    for (name, extra, added) in [
        ("vocab id 3e9", Some(3_000_000_000u64), None),
        ("vocab id u32::MAX", Some(u32::MAX as u64), None),
        ("added id u32::MAX - 1", None, Some(u32::MAX as u64 - 1)),
        (
            "vocab id MAX_VOCAB_TOKENS",
            Some(MAX_VOCAB_TOKENS as u64),
            None,
        ),
        ("sparse id past the file", Some(100_000), None),
    ] {
        match load(name, &tokenizer_json(extra, added)) {
            Err(VocabError::Format { reason, .. }) => {
                assert!(!reason.is_empty(), "{name}")
            }
            Err(e) => panic!("{name}: {e}"),
            // `tokenizers` renumbers an added token whose id the model does
            // not have: nothing is sized by the declared id
            Ok(v) if added.is_some() => assert!(zapspec_core::Vocabulary::len(&v) < 16),
            Ok(_) => panic!("{name}: loaded"),
        }
    }
}

#[test]
fn bytes_that_are_not_json_or_utf8() {
    for (name, text) in [
        ("not json", "{\"model\": "),
        ("empty", ""),
        ("deep", &"[".repeat(100_000)),
    ] {
        assert!(load(name, text).is_err(), "{name}");
    }
    let p = std::env::temp_dir().join(format!("zapspec-hostile-{}-utf8.json", std::process::id()));
    std::fs::write(&p, b"{\"a\": \"\xff\"}").unwrap();
    assert!(TokenVocab::from_hf_tokenizer_json(&p, None).is_err());
}

#[cfg(feature = "gguf")]
#[test]
fn hostile_gguf_tokenizer() {
    let mut v = b"GGUF".to_vec();
    v.extend_from_slice(&3u32.to_le_bytes());
    v.extend_from_slice(&0u64.to_le_bytes());
    v.extend_from_slice(&1u64.to_le_bytes());
    v.extend_from_slice(&(1u64 << 62).to_le_bytes());
    let p = std::env::temp_dir().join(format!("zapspec-hostile-{}.gguf", std::process::id()));
    std::fs::write(&p, &v).unwrap();
    let r = timed("gguf string length 2^62", || TokenVocab::from_gguf(&p));
    assert!(matches!(r, Err(VocabError::Format { .. })));
}
