//! `TokenVocab::from_hf_tokenizer_json` on any bytes: never a panic, and no
//! table sized by a token id the file declares beyond
//! `zapspec_vocab::MAX_VOCAB_TOKENS` or the file's own length. A loaded
//! vocabulary encodes and decodes a short text without panicking.

#![no_main]

use libfuzzer_sys::fuzz_target;
use zapspec_core::Vocabulary;
use zapspec_vocab::TokenVocab;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!(
        "zapspec-fuzz-tokenizer-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, data).expect("write");
    if let Ok(v) = TokenVocab::from_hf_tokenizer_json(&path, None) {
        let n = v.len();
        if let Ok(ids) = v.encode("hello, wörld 12") {
            assert!(ids.iter().all(|&t| (t as usize) < n));
            let _ = v.decode(&ids);
        }
    }
});
