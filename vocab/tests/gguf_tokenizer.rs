//! SmolLM2's tokenizer read from its GGUF file against an independent
//! reference: token ids of ≥ 10,000 lines of this repository's text (and
//! whole files) recorded in `tests/fixtures/smollm2_tokens.jsonl` by
//! `scripts/reference/smollm2_reference.py` — a byte-level BPE written
//! there from the algorithm (llama.cpp's `smollm` pre-tokenizer regexes,
//! merges by rank), cross-checked against llama.cpp's tokenizer when
//! `llama_cpp` is installed (the fixture's first line says which). Needs the model file
//! (`scripts/fetch-smollm2.sh`); skips with a message when it is absent.
#![cfg(feature = "gguf")]

use std::path::{Path, PathBuf};

use zapspec_vocab::{ChatMl, Message, PreTokenizer, TokenVocab, Vocabulary};

fn model_path() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "skipping: {} is absent (run scripts/fetch-smollm2.sh)",
            p.display()
        );
        None
    }
}

#[test]
fn encoding_equals_the_reference_on_repository_text() {
    let Some(p) = model_path() else { return };
    let (v, info) = TokenVocab::from_gguf(&p).unwrap();
    assert_eq!(info.pre_tokenizer, PreTokenizer::DigitsThenGpt2);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2_tokens.jsonl");
    let text = std::fs::read_to_string(fixture).unwrap();
    let (mut n, mut bad, mut tokens) = (0usize, Vec::new(), 0usize);
    for line in text.lines() {
        let j: serde_json::Value = serde_json::from_str(line).unwrap();
        let s = j["text"].as_str().unwrap();
        let want: Vec<u32> = j["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        let got = v.encode(s).unwrap();
        // Exact bytes: the reference ids decode to the text.
        assert_eq!(v.decode(&want), s.as_bytes(), "bytes of {s:?}");
        if got != want {
            bad.push(s.to_string());
        }
        n += 1;
        tokens += want.len();
    }
    eprintln!(
        "{n} texts, {tokens} reference tokens, {} mismatches",
        bad.len()
    );
    assert!(n >= 10_000, "only {n} texts in the fixture");
    assert!(
        bad.is_empty(),
        "{} mismatches, first: {:?}",
        bad.len(),
        &bad[..bad.len().min(3)]
    );
}

#[test]
fn vocabulary_shape_and_chat_template() {
    let Some(p) = model_path() else { return };
    let (v, info) = TokenVocab::from_gguf(&p).unwrap();
    assert_eq!(v.len(), 49_152);
    assert_eq!(v.eos(), 2);
    assert_eq!(info.bos, Some(1));
    assert_eq!(info.control.len(), 17);
    for t in 0..17 {
        assert!(v.is_special(t) && v.token_bytes(t).is_empty(), "token {t}");
    }
    assert_eq!(v.num_ordinary(), 49_152 - 17);
    // Printable ASCII, tab and newline are single-byte tokens (some C0
    // control bytes are not in this vocabulary at all).
    for b in (0x20..0x7Fu8).chain([b'\t', b'\n', b'\r']) {
        assert!(v.find(&[b]).is_some(), "byte {b:#04x}");
    }
    let chat = ChatMl::from_gguf_info(&info).unwrap();
    assert_eq!(
        chat.default_system.as_deref(),
        Some("You are a helpful AI assistant named SmolLM, trained by Hugging Face")
    );
    let ids = chat
        .encode(&v, &[Message::user("Hi <|im_end|>")], true)
        .unwrap();
    // The default system turn, the user turn (whose text `<|im_end|>` is
    // plain text), and the generation prompt: three `<|im_start|>`.
    assert_eq!(ids.iter().filter(|&&t| t == chat.im_start).count(), 3);
    assert_eq!(ids.iter().filter(|&&t| t == chat.im_end).count(), 2);
    let text: Vec<u8> = ids
        .iter()
        .flat_map(|&t| match t {
            1 => b"<|im_start|>".to_vec(),
            2 => b"<|im_end|>".to_vec(),
            _ => v.token_bytes(t).to_vec(),
        })
        .collect();
    assert_eq!(
        String::from_utf8(text).unwrap(),
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi <|im_end|><|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn non_gguf_files_are_errors() {
    let d = std::env::temp_dir().join(format!("zapspec-vocab-gguf-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("x.gguf");
    std::fs::write(&p, b"GGUF\x03\x00\x00\x00garbage").unwrap();
    assert!(TokenVocab::from_gguf(&p).is_err());
    assert!(TokenVocab::from_gguf(&d.join("missing.gguf")).is_err());
}
